"""The self-contained tony (`tony pack`, what `make dist` ships and the yarn
backend localizes) runs where none of its libraries exist: a root file system
holding only a static busybox (no libc, no /lib at all), entered with chroot
in a mount namespace of its own. Client, coordinator and executors all run
in there, and the user's command sees nothing of tony's libraries."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TONY

BUSYBOX = shutil.which("busybox")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root (CI runs as root)")


@pytest.fixture(scope="module")
def bare_root(tmp_path_factory):
    """A root file system with a static busybox, tony unpacked under /opt and
    nothing else: no glibc, none of the Debian libraries tony links."""
    assert BUSYBOX, "busybox-static is missing (scripts/install-deps installs it)"
    out = subprocess.run(["file", "-L", BUSYBOX], capture_output=True, text=True).stdout
    assert "statically linked" in out or "static-pie" in out, f"{BUSYBOX} is not static: {out}"
    root = tmp_path_factory.mktemp("bare-root")
    for d in ("bin", "proc", "dev", "tmp", "opt", "root"):
        (root / d).mkdir()
    shutil.copy(BUSYBOX, root / "bin" / "busybox")
    for applet in ("sh", "env", "cat", "echo", "sleep", "ls", "grep"):
        (root / "bin" / applet).symlink_to("busybox")
    # No bash: the user's command runs under bash -c where there is one,
    # else under /bin/sh, all that a bare host or an image needs (issue 34).
    archive = root / "tmp" / "tony.tar.gz"
    subprocess.run([TONY, "pack", str(archive), "--prefix", "tony-test/"], check=True)
    subprocess.run(["tar", "xzf", str(archive), "-C", str(root / "opt")], check=True)
    archive.unlink()
    return root


def run_in(root, *argv, timeout=120):
    """argv inside the bare root: a private mount namespace with /proc and
    /dev, an environment with nothing from this one."""
    script = ('mount -t proc proc "$R/proc" && mount --rbind /dev "$R/dev" && '
              'exec chroot "$R" /bin/env -i HOME=/root PATH=/bin "$@"')
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv],
                          env={"R": str(root), "PATH": os.environ["PATH"]}, capture_output=True, text=True,
                          timeout=timeout)


def test_the_root_has_none_of_tonys_libraries(bare_root):
    libs = [p for p in bare_root.rglob("*.so*") if "tony-test/lib/tony" not in str(p)]
    assert libs == []
    assert not (bare_root / "lib").exists() and not (bare_root / "usr").exists() and not (bare_root / "lib64").exists()
    # and the unpacked program really needs them: it is a dynamic ELF
    program = bare_root / "opt" / "tony-test" / "lib" / "tony" / "tony"
    assert "dynamically linked" in subprocess.run(["file", str(program)], capture_output=True, text=True).stdout
    direct = run_in(bare_root, "/opt/tony-test/lib/tony/tony", "--help")
    assert direct.returncode != 0, "the bare program should not start without its loader"


def test_help_and_version(bare_root):
    r = run_in(bare_root, "/opt/tony-test/bin/tony", "--help")
    assert r.returncode == 0, r
    assert "usage: tony VERB" in r.stdout
    r = run_in(bare_root, "/opt/tony-test/bin/tony", "--version")
    assert r.returncode == 0 and r.stdout.startswith("tony "), r


def test_a_local_job_runs_and_its_tasks_inherit_nothing(bare_root):
    command = "sh -c 'echo marker-$TASK_INDEX; env > env.txt; cat env.txt'"
    r = run_in(bare_root, "/opt/tony-test/bin/tony", "submit", "--executes", command,
               "--conf", "tony.worker.instances=2", "--conf", "tony.application.framework=generic")
    assert r.returncode == 0, r
    assert "SUCCEEDED" in r.stdout + r.stderr
    jobs = sorted((bare_root / "root" / ".tony" / "jobs").iterdir())
    attempt = jobs[-1] / "attempts" / "0"
    for i in (0, 1):
        out = (attempt / f"worker-{i}" / "stdout").read_text()
        assert f"marker-{i}" in out
        env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        assert env["TASK_INDEX"] == str(i)
        leaked = {k: v for k, v in env.items() if k.startswith("LD_") or "lib/tony" in v}
        assert leaked == {}, f"tony's libraries leaked into the task's env: {leaked}"
    # the coordinator and executors were the self-contained ones, run through
    # the launcher (their logs say so by existing at all in here)
    assert (jobs[-1] / "am.log").read_text().count("gang complete") == 1
    # with busybox's sh, since there is no bash, and the executor says so
    log = (attempt / "worker-0" / "executor.log").read_text()
    assert "bash is not on PATH here: the command runs with /bin/sh" in log, log


def test_xml_encodings_without_icu_data(bare_root):
    """The archive ships ICU's data library emptied (src/launcher/icudata_empty.c):
    UTF-8 and Latin-1 configs read as ever; one in an encoding only ICU's
    tables know is refused naming the file, never a crash."""
    (bare_root / "tmp" / "latin.xml").write_bytes(
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<configuration><property>'
        b'<name>tony.application.name</name><value>caf\xe9</value></property></configuration>\n')
    r = run_in(bare_root, "/opt/tony-test/bin/tony", "submit", "--dry-run", "--conf_file", "/tmp/latin.xml",
               "--executes", "true")
    assert r.returncode == 0, r
    (bare_root / "tmp" / "sjis.xml").write_bytes(
        b'<?xml version="1.0" encoding="Shift_JIS"?>\n<configuration></configuration>\n')
    r = run_in(bare_root, "/opt/tony-test/bin/tony", "submit", "--dry-run", "--conf_file", "/tmp/sjis.xml",
               "--executes", "true")
    assert r.returncode == 2, r
    assert "/tmp/sjis.xml" in r.stderr and "Shift_JIS" in r.stderr, r
    archive = bare_root.parent / "icu-check.tar.gz"
    subprocess.run([TONY, "pack", str(archive)], check=True)
    listing = subprocess.run(["tar", "tzvf", str(archive)], capture_output=True, text=True, check=True).stdout
    icu = [line for line in listing.splitlines() if "libicudata" in line]
    assert icu and int(icu[0].split()[2]) < 100_000, icu
