"""`tony submit` on a real terminal (a pseudo-terminal from Python's pty): a
status block redrawn in place with ANSI cursor movement, failures and
restarts printed above it, and the final state left on the screen; plain
TonY lines whenever stdout is a pipe, NO_COLOR is set or TERM is dumb. A small
terminal emulator below replays the bytes to see the screen a person sees."""
import fcntl
import os
import pty
import re
import struct
import subprocess
import termios

import pytest

from conftest import PYTHON, TONY

COLS, ROWS = 100, 50
SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.tensorboard.memory=1g", "--conf", "tony.ps.instances=0"]

# Attempt 0: the chief fails. Attempt 1: the workers stay until TensorBoard's
# link is up (so the block shows it), then succeed.
TASK_SH = r"""
echo "attempt $SESSION_ID of $JOB_NAME:$TASK_INDEX"
if [ "$SESSION_ID" = 0 ]; then
  [ "$TASK_INDEX" = 0 ] && { sleep 1; echo "chief fails" >&2; exit 3; }
  exec sleep 60
fi
"$PY" - <<'EOF'
import json, os, time, urllib.request
for _ in range(600):
    req = urllib.request.Request(os.environ["TONY_AM_URL"] + "/v1/job",
                                 headers={"X-Tony-Token": os.environ["TONY_READ_TOKEN"]})
    if "tensorboard_url" in json.load(urllib.request.urlopen(req)):
        break
    time.sleep(0.2)
EOF
sleep 2
"""


def submit_on(tony, args, tty=True, cols=COLS, **env):
    """Runs `tony submit` with stdout on a pseudo-terminal (or a pipe); its bytes."""
    e = dict(tony.env, TERM="xterm-256color")
    e.pop("NO_COLOR", None)
    e.update(env)
    base = [TONY, "submit", "--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g"]
    if not tty:
        p = subprocess.run([*base, *args], env=e, capture_output=True, timeout=240)
        return p.returncode, p.stdout
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, cols, 0, 0))
    p = subprocess.Popen([*base, *args], env=e, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait(timeout=60)
    return p.returncode, out


ESC = re.compile(r"\x1b\[(\d*)([A-Za-z])")


def replay(raw, cols=COLS):
    """The screen (scrollback included) after the bytes, as an xterm shows
    them: text wraps at cols; understood are CR, LF, cursor up (A), erase to
    the end of the line (K) or the screen (J) and colours (m); any other
    escape fails the test."""
    lines, row, col = [""], 0, 0
    text = raw.decode()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\x1b":
            m = ESC.match(text, i)
            assert m and m.group(2) in "AKJm", f"unexpected escape sequence {text[i:i + 8]!r}"
            n = int(m.group(1) or 1)
            if m.group(2) == "A":
                row = max(0, row - n)
            elif m.group(2) == "K":
                lines[row] = lines[row][:col]
            elif m.group(2) == "J":
                lines[row] = lines[row][:col]
                del lines[row + 1:]
            i = m.end()
            continue
        if c == "\r":
            col = 0
        elif c == "\n":
            row += 1
        else:
            if col >= cols:  # auto-wrap
                row, col = row + 1, 0
            while len(lines) <= row:
                lines.append("")
            line = lines[row].ljust(col)
            lines[row] = line[:col] + c + line[col + 1:]
            col += 1
        while len(lines) <= row:
            lines.append("")
        i += 1
    return [l.rstrip() for l in lines]


def test_live_block_on_a_terminal(tony, scripts):
    (scripts / "task.sh").write_text(TASK_SH)
    rc, raw = submit_on(tony, ["--src_dir", str(scripts), "--executes", "bash task.sh", "--shell_env", f"PY={PYTHON}",
                               "--conf", f"tony.python-exec-path={PYTHON}", "--sidecar_tensorboard_log_dir", "tb",
                               "--conf", "tony.worker.instances=2", "--conf", "tony.am.retry-count=1", *SMALL])
    screen = replay(raw)
    text = "\n".join(screen)
    assert rc == 0, text
    app = next(l.split()[2] for l in screen if l.startswith("tony: job application_"))
    # redrawn in place: cursor up over the block, lines cleared as rewritten
    assert len(re.findall(rb"\x1b\[\d+A", raw)) >= 3, raw[:2000]
    assert b"\x1b[K" in raw and b"\x1b[36mRUNNING\x1b[0m" in raw
    # TonY's plain lines are not used on a terminal
    assert not any(re.match(r"tony: (RUNNING|SUCCEEDED|FAILED|FINISHED): ", l) for l in screen), text
    # one-off messages stay above, in order
    fail = next(i for i, l in enumerate(screen) if l.startswith("tony: worker:0 FAILED in attempt 0: exit code 3"))
    restart = next(i for i, l in enumerate(screen)
                   if l == "tony: attempt 0 failed; restarting the job: attempt 1 (0 restarts left)")
    assert fail < restart, text
    # exactly one block is left, showing the final state, below the messages
    heads = [i for i, l in enumerate(screen) if l.startswith(f"tony: {app} ")]
    assert len(heads) == 1 and heads[0] > restart, text
    h = heads[0]
    assert re.fullmatch(rf"tony: {app} FINISHED SUCCEEDED, attempt 1 \(1 restart\), \d+s", screen[h]), screen[h]
    assert sorted(screen[h + 1:h + 3]) == ["  tensorboard 1 task: 1 FINISHED", "  worker      2 tasks: 2 SUCCEEDED"], text
    assert screen[h + 3].startswith("  tensorboard:0 FINISHED"), text  # the task table follows the block
    # while it ran, the block carried the links
    assert re.search(rb"  TensorBoard +http://127\.0\.0\.1:\d+/ \(tensorboard:0\)\x1b\[K", raw), raw[-3000:]
    assert re.search(rb"  web page +http://127\.0\.0\.1:\d+/\x1b\[K", raw)
    # a block line never wraps: each fits the terminal
    for line in re.findall(rb"\r?([^\r\n]*)\x1b\[K", raw):
        assert len(ESC.sub("", line.decode())) < COLS, line
    # the chief's (worker:0's) output of each attempt, from its file of that
    # attempt (a restart in place gives it a new one), above the block
    out = [screen.index("tony: worker:0's output:"), screen.index("attempt 0 of worker:0"),
           screen.index("tony: worker:0's output in attempt 1:"), screen.index("attempt 1 of worker:0")]
    assert out == sorted(out) and out[-1] < h, text
    assert not any(l.endswith("of worker:1") for l in screen), text


def test_block_lines_fit_a_narrow_terminal(tony, scripts):
    (scripts / "task.sh").write_text("sleep 1\n")
    rc, raw = submit_on(tony, ["--src_dir", str(scripts), "--executes", "bash task.sh",
                               "--conf", "tony.worker.instances=1", *SMALL], cols=40)
    assert rc == 0
    screen = replay(raw, cols=40)
    blocks = [l for l in re.findall(rb"\r?([^\r\n]*)\x1b\[K", raw)]
    assert blocks and all(len(ESC.sub("", b.decode())) <= 39 for b in blocks), blocks
    # the long header was cut, and its colour reset where it was cut
    head = next(l for l in screen if l.startswith("tony: application_"))
    assert len(head) == 39, head
    assert any(b.endswith(b"\x1b[0m") for b in blocks)


def submit_plainly(tony, args, how):
    """Submits where no live block is wanted: a pipe, or a terminal saying
    NO_COLOR or TERM=dumb."""
    if how == "pipe":
        return submit_on(tony, args, tty=False)
    return submit_on(tony, args, **({"NO_COLOR": "1"} if how == "NO_COLOR" else {"TERM": "dumb"}))


@pytest.mark.parametrize("how", ["pipe", "NO_COLOR", "TERM=dumb"])
def test_plain_lines_unless_a_willing_terminal(tony, scripts, how):
    (scripts / "task.sh").write_text("sleep 1\n")
    args = ["--src_dir", str(scripts), "--executes", "bash task.sh", "--conf", "tony.worker.instances=2", *SMALL]
    rc, raw = submit_plainly(tony, args, how)
    assert rc == 0, raw
    assert b"\x1b" not in raw, raw
    out = raw.decode().replace("\r\n", "\n")
    assert "tony: RUNNING: worker [0, 1]\n" in out and "tony: SUCCEEDED: worker [0, 1]\n" in out, out


# Each task says who it is; only the one a person watches (the chief, else
# worker 0, a single-node job's command) reaches the terminal, its last line
# even without a newline.
WHO = "${JOB_NAME:-am}:${TASK_INDEX:-0}"  # a single-node job's command has neither
WHO_SH = f'echo "output of {WHO}"; sleep 1; echo "rank ${{RANK:-none}}"; printf "last words of {WHO}"'


@pytest.mark.parametrize("kind,args,shown", [
    ("shell job", ["--conf", "tony.worker.instances=2"], "worker:0"),
    ("chief and workers", ["--conf", "tony.chief.instances=1", "--conf", "tony.worker.instances=2"], "chief:0"),
    ("pytorch, no chief", ["--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2"],
     "worker:0"),
    ("single-node", [], "am:0"),
])
def test_the_chiefs_output_on_a_terminal(tony, kind, args, shown):
    """Issue 21: `tony submit` on a terminal shows the chief's output as
    `make demo` does, for every job: above the status block, whole lines,
    the others' output left to `tony logs`."""
    rc, raw = submit_on(tony, ["--executes", WHO_SH, *args, *SMALL])
    screen = replay(raw)
    text = "\n".join(screen)
    assert rc == 0, text
    header = screen.index(f"tony: {shown}'s output:")
    lines = [screen.index(f"output of {shown}"), screen.index(f"last words of {shown}")]
    assert header < lines[0] < lines[1], text
    final = next(i for i, l in enumerate(screen) if re.match(r"tony: application_\S+ FINISHED SUCCEEDED", l))
    assert lines[1] < final, text  # above the block left at the end
    others = [l for l in screen if re.match(r"(output|last words) of ", l) and not l.endswith(f" of {shown}")]
    assert not others, text
    if kind == "pytorch, no chief":
        assert "rank 0" in screen and "rank 1" not in screen, text


@pytest.mark.parametrize("how", ["NO_COLOR", "TERM=dumb", "pipe"])
def test_the_chiefs_output_with_plain_lines(tony, how):
    """A terminal that wants no live block still shows the chief's output,
    between TonY's plain lines; a pipe (a script, CI) gets those lines only."""
    args = ["--executes", WHO_SH, "--conf", "tony.worker.instances=2", *SMALL]
    rc, raw = submit_plainly(tony, args, how)
    assert rc == 0, raw
    assert b"\x1b" not in raw, raw
    lines = raw.decode().replace("\r\n", "\n").split("\n")
    assert "tony: SUCCEEDED: worker [0, 1]" in lines, lines
    shown = [l for l in lines if re.match(r"(output|last words) of ", l) or l == "tony: worker:0's output:"]
    if how == "pipe":
        assert shown == [], lines
    else:
        assert shown == ["tony: worker:0's output:", "output of worker:0", "last words of worker:0"], lines
        assert lines.index("last words of worker:0") < lines.index("tony: SUCCEEDED: worker [0, 1]"), lines
