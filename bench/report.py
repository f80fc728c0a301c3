"""bench/REPORT.md holds one section per benchmark, each starting with its own
"# " title; a benchmark rewrites only its section so that running one never
drops the figures of another."""
from pathlib import Path


def replace_section(path, title, text):
    """Replaces the section headed `# title` in path with text (which starts
    with that heading), or appends it when there is none."""
    out = Path(path)
    old = out.read_text() if out.exists() else ""
    heading = "# " + title
    sections, current = [], []
    for line in old.splitlines(keepends=True):
        if line.startswith("# ") and current:
            sections.append("".join(current))
            current = []
        current.append(line)
    if current:
        sections.append("".join(current))
    body = text.rstrip("\n") + "\n"
    replaced = False
    for i, s in enumerate(sections):
        if s.split("\n", 1)[0].rstrip() == heading:
            sections[i], replaced = body, True
    if not replaced:
        sections.append(body)
    out.write_text("\n".join(s.rstrip("\n") + "\n" for s in sections))
