"""A task whose command never ran (issue 34 #1): its executor could not
set it up from the job's own inputs. The root cause names the executor's
own error and where its log is, never "the script's own error", and the
node is not called bad for a fault that follows the job everywhere."""
import json


def test_corrupt_venv_is_the_root_cause_not_the_script(tony, tmp_path):
    venv = tmp_path / "venv.zip"
    venv.write_text("not a zip at all\n")
    r = tony.submit("--python_venv", str(venv), "--executes", "echo never", "--conf", "tony.worker.instances=1")
    assert r.rc != 0, r
    cause = [line for line in r.text.splitlines() if line.startswith("Root cause:")]
    assert cause, r
    assert cause[0].startswith("Root cause: worker:0 could not start its command in attempt 0: unpacking the python "
                               "venv venv.zip: cannot open archive"), r
    assert "Unrecognized archive format" in cause[0] and "Its executor gave up before running it" in cause[0], r
    log = r.job_dir() / "attempts" / "0" / "worker-0" / "executor.log"
    assert f"All of it: {log}" in r.text, r
    assert "the script's own error" not in r.text and "wrote nothing to stderr" not in r.text, r
    # the job's own input is bad, not the node it ran on
    assert "is bad" not in r.text, r
    assert "is bad" not in (r.job_dir() / "am.log").read_text()
    # the same everywhere the cause is shown: status, and the job's JSON
    out = tony.run("status", r.job_dir().name, check_rc=None).text
    assert "worker:0 could not start its command" in out and "the script's own error" not in out, out
    st = json.loads(tony.run("status", r.job_dir().name, "--json").out)
    rc = st["root_cause"]
    assert rc["command_started"] is False and rc["exit_status"] == 122, rc
    assert "Unrecognized archive format" in rc["executor_log"] and rc["executor_log_path"] == str(log), rc
    # and the task's own stderr says it, where `tony logs` and a cluster's log reader find it
    assert "tony: worker:0 could not start its command: unpacking the python venv" in r.log("worker", 0, "stderr")
    # and the task's own line says its exit was before its command
    assert r.task("worker", 0)["exit_meaning"] == "exit code 122, before its command started", r.task("worker", 0)
