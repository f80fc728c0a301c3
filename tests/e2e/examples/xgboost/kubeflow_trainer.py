"""Runs Kubeflow Trainer's distributed XGBoost example in one tony task, as
Kubeflow's CustomTrainer runs it in each node of its "xgboost-distributed"
runtime: the notebook's cell that defines the training function is run, and
the function is called with no arguments. The notebook beside this file is
vendored unedited (a notebook is JSON: it has no room for a header, so its
origin is here):
  Origin: https://github.com/kubeflow/trainer,
  examples/xgboost/distributed-training/xgboost-distributed.ipynb,
  commit 98d9f4e651630b77eb2033ea98343410baf5ba4f. Apache License 2.0.
The function reads what Kubeflow's XGBoost runtime sets (DMLC_TASK_ID,
DMLC_NUM_WORKER, DMLC_TRACKER_URI, DMLC_TRACKER_PORT), which tony's xgboost
framework sets too; task 0 starts XGBoost's tracker on the tracker port.
Adapted here, and only here: its model is saved under /workspace (the work
dir of Kubeflow's image), which becomes the task's own dir's workspace/.
Added here for the test: the function keeps its model to itself, and XGBoost
prints the evaluation log only in the tracker's process, so once the
function returns this prints a digest of the model each process trained
("model sha256 HEX"): the workers agree when the digests are equal.
Usage: kubeflow_trainer.py NOTEBOOK FUNCTION"""
import hashlib
import json
import os
import sys

import xgboost

notebook, function = sys.argv[1:3]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), notebook)) as f:
    cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
defining = [c for c in cells if "".join(c["source"]).startswith(f"def {function}(")]
if len(defining) != 1:
    sys.exit(f"kubeflow_trainer.py: {notebook} has {len(defining)} code cells defining {function}(), not one")

workspace = os.path.join(os.getcwd(), "workspace")
os.makedirs(workspace, exist_ok=True)
save_model = xgboost.Booster.save_model


def save_in_task_dir(self, fname):
    if isinstance(fname, str) and fname.startswith("/workspace/"):
        fname = os.path.join(workspace, fname[len("/workspace/"):])
    return save_model(self, fname)


xgboost.Booster.save_model = save_in_task_dir
trained = []
train = xgboost.train


def keep_model(*args, **kwargs):
    trained.append(train(*args, **kwargs))
    return trained[-1]


xgboost.train = keep_model

scope = {"__name__": "__main__"}
exec(compile("".join(defining[0]["source"]), notebook, "exec"), scope)
scope[function]()
for booster in trained:
    print("model sha256", hashlib.sha256(booster.save_raw("json")).hexdigest(), flush=True)
