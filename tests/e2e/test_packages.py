"""`make dist`'s three packages (scripts/make-dist): the wheel pip-installs
into a fresh venv with nothing to build and that venv's `tony` runs a real
PyTorch DDP job; the tarball runs wherever it is unpacked (through a symlink
too); the .deb installs with dpkg and depends on no other package."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, TONY

EXAMPLES = str(REPO / "examples")
TORCH_PY = "/usr/bin/python3"  # Debian's torch imports under the system interpreter


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """What `make dist` made (TONY_DIST_DIR, as `make test` sets it: the
    Release build users install, by the platform's own compiler), else a
    pack of the build under test."""
    made_by_make = os.environ.get("TONY_DIST_DIR")
    if made_by_make:
        out = Path(made_by_make)
    else:
        out = tmp_path_factory.mktemp("dist")
        r = subprocess.run([sys.executable, str(REPO / "scripts" / "make-dist"), TONY, str(out)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
    # the Airflow provider's wheel lies beside tony's (test_airflow.py tests it)
    made = {p.suffix: p for p in out.iterdir() if p.is_file() and not p.name.startswith("tony_airflow-")}
    assert set(made) == {".gz", ".whl", ".deb"}, made
    return made


def version():
    return subprocess.run([TONY, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]


def clean_env(home, path):
    return {"PATH": path, "HOME": str(home), "TONY_HOME": str(home / ".tony"), "LANG": "C.UTF-8"}


@pytest.mark.ml
def test_wheel_into_a_fresh_venv_runs_pytorch_ddp(dist, tmp_path):
    venv = tmp_path / "venv"
    # Debian's torch is seen through the system site packages; the wheel
    # itself comes from the file only (no index, no sdist, nothing built).
    subprocess.run([TORCH_PY, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index", "--only-binary=:all:",
                        "--disable-pip-version-check", str(dist[".whl"])], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (venv / "bin" / "tony").is_file() and (venv / "lib" / "tony" / "tony").is_file()
    env = clean_env(tmp_path, f"{venv / 'bin'}:/usr/bin:/bin")
    r = subprocess.run(["tony", "submit", "--src_dir", EXAMPLES, "--python_binary_path", TORCH_PY,
                        "--executes", "pytorch/ddp_digits.py", "--task_params", "--epochs 15",
                        "--conf", "tony.application.framework=pytorch", "--conf", "tony.worker.instances=2",
                        "--conf", "tony.worker.memory=1g"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    job = sorted((tmp_path / ".tony" / "jobs").iterdir())[-1]
    out = (job / "attempts" / "0" / "worker-0" / "stdout").read_text()
    m = re.search(r"final accuracy: ([0-9.]+)", out)
    assert m and float(m.group(1)) >= 0.85, out[-2000:]
    # and the venv's tony knows the job afterwards
    am = subprocess.run(["tony", "list"], env=env, capture_output=True, text=True)
    assert job.name in am.stdout, am


def test_wheel_is_a_platform_wheel_of_data_only(dist):
    import zipfile
    name = dist[".whl"].name
    assert name.startswith(f"tony_ml-{version()}-py3-none-") and "manylinux" in name and "musllinux" in name
    with zipfile.ZipFile(dist[".whl"]) as z:
        names = z.namelist()
        wheel = z.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
        launcher = z.getinfo(next(n for n in names if n.endswith(".data/scripts/tony")))
        loader = z.getinfo(next(n for n in names if n.endswith("/lib/tony/ld-linux-x86-64.so.2")))
    assert "Root-Is-Purelib: false" in wheel
    assert all(".data/" in n or ".dist-info/" in n for n in names), names
    for zi in (launcher, loader):
        assert (zi.external_attr >> 16) & 0o111, f"{zi.filename} is not executable in the wheel"


def test_tarball_runs_where_unpacked_and_through_a_symlink(dist, tmp_path):
    subprocess.run(["tar", "xzf", str(dist[".gz"]), "-C", str(tmp_path)], check=True)
    launcher = tmp_path / f"tony-{version()}" / "bin" / "tony"
    link_dir = tmp_path / "somewhere-on-path"
    link_dir.mkdir()
    (link_dir / "tony").symlink_to(launcher)
    for exe in (launcher, link_dir / "tony"):
        r = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == f"tony {version()}", r
    # What ps shows is tony's own command line, not the loader's with its options.
    (tmp_path / "history" / "finished").mkdir(parents=True)
    portal = subprocess.Popen([str(launcher), "portal", "--port", "0", "--location", str(tmp_path / "history")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "portal at http" in portal.stdout.readline()
        argv = Path(f"/proc/{portal.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        assert argv == [str(launcher).encode(), b"portal", b"--port", b"0", b"--location",
                        str(tmp_path / "history").encode()], argv
    finally:
        portal.terminate()
        portal.wait(timeout=30)
    env = clean_env(tmp_path, f"{link_dir}:/usr/bin:/bin")
    r = subprocess.run(["tony", "submit", "--executes", "echo from-the-tarball",
                        "--conf", "tony.worker.instances=1", "--conf", "tony.application.framework=generic"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_deb_installs_with_dpkg_and_needs_nothing(dist, tmp_path):
    info = subprocess.run(["dpkg-deb", "-f", str(dist[".deb"])], capture_output=True, text=True, check=True).stdout
    assert "Package: tony" in info and f"Version: {version()}" in info and "Architecture: amd64" in info
    assert "Depends" not in info, info
    root = tmp_path / "root"
    (root / "var" / "lib" / "dpkg" / "info").mkdir(parents=True)
    (root / "var" / "lib" / "dpkg" / "updates").mkdir()
    (root / "var" / "lib" / "dpkg" / "status").touch()
    if os.geteuid() != 0:
        pytest.skip("dpkg --root needs root (CI runs as root)")
    r = subprocess.run(["dpkg", f"--root={root}", "-i", str(dist[".deb"])], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(root / "usr" / "bin" / "tony"), "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"tony {version()}", r
    assert (root / "usr" / "lib" / "tony" / "ld-linux-x86-64.so.2").is_file()
