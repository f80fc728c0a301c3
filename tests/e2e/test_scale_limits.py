"""Job sizes the kernel cannot start: TF_CONFIG and CLUSTER_SPEC list every
task's host:port, and past ~7,200 tasks (loopback addresses; fewer with a
cluster's host names) they pass Linux's 128 KiB limit on one environment
string, so every task's exec would fail with E2BIG. tony refuses such a plan
at submit and in --dry-run (exit 2, nothing staged), naming the variable, the
count, the size and the limit; a plan just under it is accepted."""
import os
import time

import pytest

PAGE = os.sysconf("SC_PAGE_SIZE")
LIMIT = 32 * PAGE  # MAX_ARG_STRLEN


def workers(n):
    # a machine pool big enough that only the env limit can refuse the job
    return ["--executes", "python train.py", "--conf", f"tony.worker.instances={n}",
            "--conf", "tony.worker.memory=1m", "--conf", f"tony.local.vcores={n + 16}",
            "--conf", f"tony.local.memory={n + 16}m"]


def nothing_staged(tony):
    jobs = tony.home / "jobs"
    return not jobs.exists() or not any(jobs.iterdir())


# Only --dry-run with 10,000 workers: a tony without the check would start
# them all. The real submit's refusal is tested below with one task.
@pytest.mark.skipif(PAGE != 4096, reason="the counts below assume 4 KiB pages (a 128 KiB limit)")
def test_a_plan_whose_env_cannot_be_execd_is_refused_quickly(tony):
    start = time.monotonic()
    r = tony.run("submit", "--dry-run", *workers(10000))
    took = time.monotonic() - start
    assert r.rc == 2, r
    assert "TF_CONFIG of worker:9999 would be 180" in r.err, r
    assert "this job's 10000 tasks" in r.err, r
    assert f"limit of {LIMIT} bytes for one environment string (MAX_ARG_STRLEN)" in r.err, r
    assert "run at most about 72" in r.err and "tony.<role>.instances" in r.err, r
    assert nothing_staged(tony)
    # building 10,000 tasks' plan and each role's last env is cheap
    assert took < 5, f"{took:.1f} s"
    # the plan is still printed: it is how the user sees what to change
    assert "role worker: 10000 instance(s)" in r.out, r


@pytest.mark.skipif(PAGE != 4096, reason="the counts below assume 4 KiB pages (a 128 KiB limit)")
def test_a_plan_just_under_the_limit_is_accepted(tony):
    r = tony.run("submit", "--dry-run", *workers(7200))
    assert r.rc == 0, r
    assert "MAX_ARG_STRLEN" not in r.text, r
    assert "role worker: 7200 instance(s)" in r.out, r
    # TF_CONFIG of the last worker, just under 128 KiB
    assert "TF_CONFIG=[the first 129" in r.out, r
    assert nothing_staged(tony)


def test_a_user_variable_over_the_limit_is_refused_at_submit(tony, tmp_path):
    """A real submit, before anything is staged: the user's own variable
    (too long for tony's own command line, so from a conf file), named with
    the key that set it; the task count has nothing to do with it."""
    conf = tmp_path / "tony.xml"
    conf.write_text("<configuration><property><name>tony.execution.envs</name>"
                    f"<value>BIG={'x' * LIMIT}</value></property></configuration>")
    r = tony.submit("--conf_file", str(conf), "--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.worker.memory=256m")
    assert r.rc == 2, r
    assert f"BIG (tony.execution.envs) would be {LIMIT + 5} bytes in worker:0's env" in r.err, r
    assert "MAX_ARG_STRLEN" in r.err and "Shorten it" in r.err, r
    assert nothing_staged(tony)
