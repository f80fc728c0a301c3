"""Runs a framework's own multi-process check that ships inside its package
(python -m MODULE, unedited), for frameworks whose checks are modules, not
scripts tony could name. --in-job-dir first: start in the job's shared dir
(TONY_JOB_DIR), for checks that assume every process starts in one
directory (accelerate's test_script syncs its processes through a file
there)."""
import os
import runpy
import sys

args = sys.argv[1:]
if args[:1] == ["--in-job-dir"]:
    os.chdir(os.environ["TONY_JOB_DIR"])
    args = args[1:]
sys.argv = args
runpy.run_module(args[0], run_name="__main__", alter_sys=True)
