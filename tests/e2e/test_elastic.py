"""Elastic jobs (issue 24, docs/elastic.md): tony.<role>.min-instances and
tony.application.elastic-settle-ms as a user meets them. Bad elastic plans
are refused at submit and --dry-run (exit 2, naming the key, nothing
started); a job that loses a worker whose replacement cannot come goes on
with the others in a renumbered world."""
import pytest

SMALL = ["--conf", "tony.worker.memory=256m"]


def nothing_started(tony):
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir())


REFUSED = [
    # (framework, extra conf, words the error must hold)
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=4"],
     "tony.worker.min-instances (4) is above tony.worker.instances (3)"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=0"],
     "tony.worker.min-instances is 0, but the pytorch framework cannot train without a worker task"),
    ("tensorflow", ["tony.worker.instances=2", "tony.ps.instances=2", "tony.ps.min-instances=0"],
     "tony.ps.min-instances is 0, but the tensorflow framework cannot train without a ps task"),
    ("tensorflow", ["tony.worker.instances=2", "tony.chief.instances=1", "tony.chief.min-instances=0"],
     "tony.chief.min-instances is 0, but the tensorflow framework cannot train without a chief task"),
    ("standalone", ["tony.worker.instances=1", "tony.worker.min-instances=0"],
     "tony.worker.min-instances (0) makes the job elastic, but the standalone framework cannot change its world "
     "size"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=2",
                 "tony.application.distributed-mode=FCFS"],
     "tony.worker.min-instances (2) makes the job elastic, which needs tony.application.distributed-mode GANG"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=-1"],
     "tony.worker.min-instances must be a non-negative integer"),
    ("pytorch", ["tony.worker.instances=3", "tony.worker.min-instances=2",
                 "tony.application.elastic-settle-ms=-5"],
     "tony.application.elastic-settle-ms"),
]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("framework,conf,words", REFUSED)
def test_bad_elastic_plans_are_refused_naming_the_key(tony, dry_run, framework, conf, words):
    extra = ["--dry-run"] if dry_run else []
    confs = [a for c in conf for a in ("--conf", c)]
    r = tony.submit(*extra, "--executes", "echo hi", "--conf", f"tony.application.framework={framework}", *confs,
                    *SMALL)
    assert r.rc == 2, r
    assert words in r.err, r
    nothing_started(tony)


def test_an_elastic_plan_within_its_bounds_passes_the_dry_run(tony):
    r = tony.submit("--dry-run", "--executes", "echo hi", "--conf", "tony.application.framework=pytorch",
                    "--conf", "tony.worker.instances=3", "--conf", "tony.worker.min-instances=2", *SMALL)
    assert r.rc == 0, r
