"""Mistakes that used to show only once tasks ran, caught at submit (issue
34 #4): exit 2 before anything starts, naming the flag and what to do."""
import subprocess

import pytest


def nothing_started(tony):
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir())


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("py,said", [
    ("/nonexistent/bin/python3", "--python_binary_path /nonexistent/bin/python3: no such executable"),
    ("python-that-is-not-there", "--python_binary_path python-that-is-not-there: not found on PATH"),
    ("env/bin/python", "--python_binary_path env/bin/python: no such file here or in --src_dir"),
])
def test_a_missing_interpreter_is_refused_on_the_local_backend(tony, scripts, dry_run, py, said):
    (scripts / "train.py").write_text("print('trained')\n")
    extra = ["--dry-run"] if dry_run else []
    r = tony.submit(*extra, "--src_dir", str(scripts), "--python_binary_path", py, "--executes", "train.py",
                    "--conf", "tony.worker.instances=1")
    assert r.rc == 2, r
    assert said in r.err and "(the tasks run on this machine)" in r.err, r
    nothing_started(tony)


def test_an_interpreter_inside_the_venv_is_not_looked_for_here(tony, scripts, tmp_path):
    """Relative with --python_venv: the archive's, which the task unpacks."""
    from conftest import make_venv_zip
    (scripts / "train.py").write_text("import sys; print(sys.prefix.endswith('/venv'))\n")
    r = tony.submit("--src_dir", str(scripts), "--python_venv", str(make_venv_zip(tmp_path)),
                    "--python_binary_path", "bin/python3", "--executes", "train.py", "--conf", "tony.worker.instances=1")
    assert r.rc == 0, r
    assert r.log("worker", 0).strip() == "True"


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_python_script_without_an_interpreter_gets_the_hint(tony, scripts, dry_run):
    (scripts / "train.py").write_text("print('trained')\n")
    extra = ["--dry-run"] if dry_run else []
    r = tony.submit(*extra, "--src_dir", str(scripts), "--executes", "train.py --epochs 2",
                    "--conf", "tony.worker.instances=1")
    assert r.rc == 2, r
    assert "--executes train.py --epochs 2: no interpreter runs train.py" in r.err, r
    assert "add --python_binary_path python3" in r.err and "./train.py with a #! line" in r.err, r
    nothing_started(tony)


def test_an_interpreter_before_a_shell_command_is_warned_about(tony, scripts):
    """Issue 34 #4: `python sleep 1; echo trained` would end as echo did."""
    r = tony.submit("--dry-run", "--python_binary_path", "python3", "--executes", "sleep 1; echo trained",
                    "--conf", "tony.worker.instances=1")
    assert r.rc == 0, r
    assert ("tony: warning: --executes 'sleep 1; echo trained' starts with a command on PATH, yet "
            "--python_binary_path python3 runs it: each task runs `python3 sleep 1; echo trained`") in r.err, r
    # a script, a module, a script named as a command in the src_dir: nothing said
    (scripts / "train.py").write_text("print('trained')\n")
    (scripts / "sleep").write_text("print('a script named sleep')\n")
    for executes in ("train.py --epochs 2", "-m http.server", "sleep"):
        r = tony.submit("--dry-run", "--src_dir", str(scripts), "--python_binary_path", "python3",
                        "--executes", executes, "--conf", "tony.worker.instances=1")
        assert r.rc == 0 and "warning: --executes" not in r.err, r


def test_notebook_with_a_python_without_jupyter_is_refused(tony, tmp_path):
    """Before: the URL was printed, exit 0, and the job died a second later."""
    env = tmp_path / "nojupyter"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(env)], check=True)
    py = env / "bin" / "python3"
    r = tony.run("notebook", "--python_binary_path", str(py), "--detach", timeout=120)
    assert r.rc == 2, r
    assert f"{py} cannot import jupyter_server.serverapp (ModuleNotFoundError: No module named 'jupyter_server')" \
        in r.err, r
    assert "pip install jupyter_server" in r.err and "/notebook/" not in r.out, r
    nothing_started(tony)
