"""The README's (and docs/'s) shell examples, run as a user pastes them
(issue 21): every ```sh / ```bash block runs against the real build, in a
fresh directory laid out like the clone (a copy of examples/, build/pyenv),
with TONY_BIN's directory first on PATH; a block that cannot run here (a
YARN or Slurm cluster, `make test` itself) carries a marker with its reason
right above it. A block with neither, a fence with no language (a shell
example could hide there) or a marker without a reason fails the test.
Marked `ml`: the examples train for real, so ASan's run leaves them out."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, TONY

pytestmark = pytest.mark.ml

SHELLS = ("sh", "bash")
# The marker, alone on the line right above a block's fence.
MARKER = re.compile(r"^<!-- readme-test: (?P<verb>\S+)(?: \((?P<why>.*)\))? -->$")
FENCE = re.compile(r"^```(?P<lang>\S*)\s*$")


def documents():
    """README.md and every page under docs/, as paths relative to the repo."""
    return [Path("README.md")] + sorted(p.relative_to(REPO) for p in (REPO / "docs").glob("*.md"))


def blocks(text):
    """(line, lang, marker line or None, body) for each fenced block of a
    Markdown text; line is the fence's, 1-based."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group("lang")
        j = i + 1
        while j < len(lines) and lines[j] != "```":
            j += 1
        marker = lines[start - 1] if start > 0 and lines[start - 1].startswith("<!--") else None
        out.append((start + 1, lang, marker, "\n".join(lines[start + 1:j])))
        i = j + 1
    return out


def problems_of(name, text):
    """What keeps a document's blocks from being either run or skipped for a
    reason, in words naming the file and line."""
    found = []
    for line, lang, marker, _ in blocks(text):
        where = f"{name}:{line}"
        if not lang:
            found.append(f"{where}: a fence without a language (sh for a shell example, text for output)")
            continue
        if marker is None:
            continue
        m = MARKER.match(marker)
        if not m or m.group("verb") != "skip":
            found.append(f"{where}: unknown marker {marker!r} (<!-- readme-test: skip (why) --> is the one)")
        elif lang not in SHELLS:
            found.append(f"{where}: a skip marker above a {lang} block, which is never run anyway")
        elif not (m.group("why") or "").strip():
            found.append(f"{where}: a skip without its reason: say why it cannot run here and what runs it")
    return found


def runnable():
    """pytest params, one per document with shell blocks not skipped: its
    blocks in order (line, body), run as one shell session as a reader
    pastes them one after the other."""
    params = []
    for doc in documents():
        run = [(line, body) for line, lang, marker, body in blocks((REPO / doc).read_text())
               if lang in SHELLS and marker is None]
        if run:
            params.append(pytest.param(run, id=str(doc)))
    return params


def test_every_block_is_run_or_skipped_for_a_reason():
    found = [p for doc in documents() for p in problems_of(str(doc), (REPO / doc).read_text())]
    assert not found, "\n".join(found)


def test_the_checker_finds_what_it_must():
    """The rules above on a made-up page: each kind of mistake is named."""
    page = ("```\nplain\n```\n"
            "<!-- readme-test: skip -->\n```sh\nmake test\n```\n"
            "<!-- readme-test: skip () -->\n```sh\nmake test\n```\n"
            "<!-- readme-test: maybe (why) -->\n```sh\nls\n```\n"
            "<!-- readme-test: skip (needs a cluster) -->\n```sh\nyarn app -list\n```\n"
            "```sh\necho run\n```\n")
    found = problems_of("page.md", page)
    assert [f.split(":")[1] for f in found] == ["1", "5", "9", "13"], found
    assert "without a language" in found[0] and "without its reason" in found[1] + found[2]
    assert "unknown marker" in found[3]
    assert [b[1] for b in blocks(page)] == ["", "sh", "sh", "sh", "sh", "sh"]


def test_links_to_docs_exist():
    """Every relative link of the README and docs/ names a file that exists."""
    missing = []
    for doc in documents():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (REPO / doc).read_text()):
            if "://" in target:
                continue
            path = (REPO / doc).parent / target
            # docs/keys.md is generated from tony's key registry (issue 21
            # item 2), on its own branch; every other link must resolve here.
            if not path.exists() and path.resolve() != (REPO / "docs" / "keys.md").resolve():
                missing.append(f"{doc}: {target}")
    assert not missing, missing


def clone_like(tmp_path):
    """A directory laid out as the README's examples expect the clone to be."""
    here = tmp_path / "clone"
    here.mkdir()
    shutil.copytree(REPO / "examples", here / "examples")
    (here / "build").mkdir()
    (here / "build" / "pyenv").symlink_to((REPO / "build" / "pyenv").resolve())
    return here


@pytest.mark.parametrize("run", runnable())
def test_examples_run(tony, tmp_path, run):
    here = clone_like(tmp_path)
    env = dict(tony.env, PATH=f"{Path(TONY).resolve().parent}{os.pathsep}{os.environ['PATH']}")
    # Each block says where it starts; the first command to fail ends the
    # session, and the last block named is the one it was in.
    script = "\n".join(f"echo '@@ block at line {line}' >&2\n{body}" for line, body in run)
    p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=here, env=env,
                       capture_output=True, text=True, timeout=300)
    started = re.findall(r"^@@ block at line (\d+)$", p.stderr, flags=re.M)
    if p.returncode != 0:
        failed = next(body for line, body in run if str(line) == started[-1])
        pytest.fail(f"exit {p.returncode} in the block at line {started[-1]}:\n{failed}\n"
                    f"--- stdout\n{p.stdout[-4000:]}\n--- stderr\n{p.stderr[-4000:]}")
    assert len(started) == len(run), p.stderr


def test_demo(tony, tmp_path):
    """`make demo` is `make deps build` (installing, building: what make test
    does first) and then scripts/demo, run here as it is in a tree like the
    clone's whose build/bin/tony is TONY_BIN: a real 2-worker TensorFlow
    training that must end SUCCEEDED, its accuracy printed from the chief."""
    here = clone_like(tmp_path)
    (here / "scripts").mkdir()
    shutil.copy2(REPO / "scripts" / "demo", here / "scripts" / "demo")
    (here / "build" / "bin").mkdir()
    (here / "build" / "bin" / "tony").symlink_to(Path(TONY).resolve())
    p = subprocess.run([str(here / "scripts" / "demo")], cwd=here, env=tony.env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"--- stdout\n{p.stdout[-4000:]}\n--- stderr\n{p.stderr[-4000:]}"
    assert re.search(r"^final accuracy: 0\.\d+$", p.stdout, flags=re.M), p.stdout[-4000:]
    assert "SUCCEEDED" in p.stdout, p.stdout[-4000:]
