#!/bin/bash
# The GPU proof: tony's self-contained tarball (`make dist`) on a machine with
# an NVIDIA GPU, no build there. It runs a real PyTorch training job with
# tony.worker.gpus=1 on the local backend and checks what the task was given
# (CUDA_VISIBLE_DEVICES, the device torch sees), the GPU metrics in the job's
# JSON and in its history, that more GPUs than the machine has are refused
# before anything starts (and more processes per task than its GPUs), and
# the training throughput under tony against the
# same script run bare, interleaved in the same call (median of RUNS each).
#
#   bench/gpu_proof.sh TARBALL OUT_DIR
#
# Writes OUT_DIR/gpu_proof.json (the figures and every check), the job's
# status.json and history JSON, and a log. Exit 0 only when every check
# passed. GPU_PROOF_REHEARSE=1 runs it on a machine without a GPU (a stand-in
# nvidia-smi, the CPU, tony.local.gpus=1) to rehearse the script itself.
set -uo pipefail
TARBALL=${1:?usage: gpu_proof.sh TARBALL OUT_DIR}
OUT_DIR=${2:?usage: gpu_proof.sh TARBALL OUT_DIR}
RUNS=${GPU_PROOF_RUNS:-3}
PY=${GPU_PROOF_PYTHON:-$(command -v python3)}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT_DIR"
WORK=$(mktemp -d /tmp/gpu_proof.XXXXXX)
export TONY_HOME=$WORK/home
CHECKS=$WORK/checks
: >"$CHECKS"

check() {  # check NAME OK(0/1) DETAIL
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$CHECKS"
    if [ "$2" = 1 ]; then echo "ok   $1: $3"; else echo "FAIL $1: $3"; fi
}

tar xzf "$TARBALL" -C "$WORK" || { echo "cannot unpack $TARBALL"; exit 1; }
TONY=$(echo "$WORK"/tony-*/bin/tony)
"$TONY" --version

EXTRA=()
export GPU_PROOF_REQUIRE_CUDA=1
if [ "${GPU_PROOF_REHEARSE:-0}" = 1 ]; then
    mkdir -p "$WORK/fake"
    printf '#!/bin/sh\ncase "$1" in -L) echo "GPU 0: Stand-in (UUID: GPU-0)";; *) echo "50, 1024, 8192";; esac\n' \
        >"$WORK/fake/nvidia-smi"
    chmod +x "$WORK/fake/nvidia-smi"
    export PATH=$WORK/fake:$PATH
    unset GPU_PROOF_REQUIRE_CUDA
fi
SMI=$(command -v nvidia-smi) || { echo "no nvidia-smi on PATH"; exit 1; }
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
GPU_NAME=$(nvidia-smi -L | head -1)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "GPUs: $NGPU ($GPU_NAME); python: $PY"
[ "${GPU_PROOF_REHEARSE:-0}" = 1 ] && EXTRA+=(--conf tony.local.gpus="$NGPU")

seconds_since() {  # seconds_since T0_NS: wall seconds since T0 (date +%s%N), to the millisecond
    local ms=$((($(date +%s%N) - $1) / 1000000))
    printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

submit() {  # submit OUT_PREFIX CONF...: the training job under tony; prints its wall seconds
    local prefix=$1; shift
    local t0 t1
    t0=$(date +%s%N)
    "$TONY" submit --src_dir "$HERE" --executes gpu_train.py --python_binary_path "$PY" \
        --conf tony.application.framework=pytorch --conf tony.worker.instances=1 --conf tony.worker.memory=16g \
        --conf tony.task.metrics-interval-ms=500 --shell_env GPU_PROOF_SECONDS="${GPU_PROOF_SECONDS:-12}" \
        ${GPU_PROOF_REQUIRE_CUDA:+--shell_env GPU_PROOF_REQUIRE_CUDA=1} \
        "${EXTRA[@]}" "$@" >"$prefix.out" 2>"$prefix.err"
    local rc=$?
    echo "$rc $(seconds_since "$t0")"
}

# 1. Throughput: bare and under tony, interleaved so drift hits both alike.
for i in $(seq 1 "$RUNS"); do
    t0=$(date +%s%N)
    GPU_PROOF_SECONDS=${GPU_PROOF_SECONDS:-12} "$PY" "$HERE/gpu_train.py" >"$WORK/bare$i.json" 2>"$WORK/bare$i.err"
    rc=$?
    echo "$rc $(seconds_since "$t0")" >"$WORK/bare$i.wall"
    [ $rc = 0 ] || { echo "bare run $i failed:"; cat "$WORK/bare$i.err"; }
    read -r rc wall < <(submit "$WORK/tony$i" --conf tony.worker.gpus=1)
    echo "$rc $wall" >"$WORK/tony$i.wall"
    app=$(cat "$WORK/tony$i.out" "$WORK/tony$i.err" | sed -n 's/^tony: job \(application_[0-9_]*\) submitted$/\1/p' | head -1)
    echo "$app" >"$WORK/tony$i.app"
    if [ "$rc" != 0 ] || [ -z "$app" ]; then
        echo "tony run $i failed (rc $rc):"; cat "$WORK/tony$i.out" "$WORK/tony$i.err"
        [ -n "$app" ] && tail -20 "$TONY_HOME/jobs/$app/attempts/0/worker-0/stderr" "$TONY_HOME/jobs/$app/am.log"
    else
        cp "$TONY_HOME/jobs/$app/attempts/0/worker-0/stdout" "$WORK/tony$i.json"
        cp "$TONY_HOME/jobs/$app/attempts/0/worker-0/stderr" "$WORK/tony$i.stderr"
    fi
    echo "run $i: bare $(cat "$WORK/bare$i.wall"), tony $(cat "$WORK/tony$i.wall") ($app)"
done

# 2. The job's JSON and its history, for the last run.
app=$(cat "$WORK/tony$RUNS.app")
if [ -n "$app" ]; then
    "$TONY" status "$app" --json >"$OUT_DIR/status.json" 2>"$WORK/status.err"
    "$TONY" history "$app" --json >"$OUT_DIR/history.json" 2>"$WORK/history.err"
fi

# 3. Refusals: one task asking more GPUs than the machine has, and a job
#    whose tasks together do; each must exit 2 before anything starts.
for ask in "1 $((NGPU + 1))" "$((NGPU + 1)) 1"; do
    read -r inst gpus <<<"$ask"
    jobs_before=$(ls "$TONY_HOME/jobs" 2>/dev/null | wc -l)
    "$TONY" submit --executes true --conf tony.worker.instances="$inst" --conf tony.worker.gpus="$gpus" \
        "${EXTRA[@]}" >"$WORK/refuse.out" 2>"$WORK/refuse.err"
    rc=$?
    jobs_after=$(ls "$TONY_HOME/jobs" 2>/dev/null | wc -l)
    msg=$(grep -m1 -i gpu "$WORK/refuse.err" | tr '\t' ' ')
    ok=0
    [ "$rc" = 2 ] && [ "$jobs_before" = "$jobs_after" ] && grep -q "gpus.*GPU\|GPU.*gpus" "$WORK/refuse.err" && ok=1
    check "refused_${inst}x${gpus}_gpus" $ok "rc=$rc, jobs started: $((jobs_after - jobs_before)); $msg"
done

# 3b. Several processes per task (tony.<role>.nproc-per-node): each takes
#     cuda:LOCAL_RANK, so more processes than the task's GPUs are refused.
jobs_before=$(ls "$TONY_HOME/jobs" 2>/dev/null | wc -l)
"$TONY" submit --executes true --conf tony.application.framework=pytorch --conf tony.worker.instances=1 \
    --conf tony.worker.gpus=1 --conf tony.worker.nproc-per-node=2 "${EXTRA[@]}" >"$WORK/refuse.out" 2>"$WORK/refuse.err"
rc=$?
jobs_after=$(ls "$TONY_HOME/jobs" 2>/dev/null | wc -l)
msg=$(grep -m1 nproc-per-node "$WORK/refuse.err" | tr '\t' ' ')
ok=0
[ "$rc" = 2 ] && [ "$jobs_before" = "$jobs_after" ] && [ -n "$msg" ] && ok=1
check "refused_nproc_2_on_1_gpu" $ok "rc=$rc, jobs started: $((jobs_after - jobs_before)); $msg"

# 4. Every check and figure into one JSON.
"$PY" - "$WORK" "$OUT_DIR" "$RUNS" "$NGPU" "$GPU_NAME" <<'PYEOF'
import json, statistics, sys
from pathlib import Path
work, out, runs, ngpu, gpu_name = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
checks = []
for line in (work / "checks").read_text().splitlines():
    name, ok, detail = line.split("\t", 2)
    checks.append({"name": name, "ok": ok == "1", "detail": detail})

def add(name, ok, detail):
    checks.append({"name": name, "ok": bool(ok), "detail": detail})
    print(("ok   " if ok else "FAIL ") + f"{name}: {detail}")

def load(p):
    try:
        return json.loads(p.read_text().strip().splitlines()[-1])
    except Exception as e:  # a failed run: the check below says so
        return {"error": f"{p.name}: {e}"}

bare = [load(work / f"bare{i}.json") for i in range(1, runs + 1)]
tony = [load(work / f"tony{i}.json") for i in range(1, runs + 1)]
walls = {k: [float((work / f"{k}{i}.wall").read_text().split()[1]) for i in range(1, runs + 1)] for k in ("bare", "tony")}
add("all_runs_trained", all("samples_per_s" in r for r in bare + tony), f"{runs} bare and {runs} tony runs")
tput = {k: [r.get("samples_per_s", 0) for r in v] for k, v in (("bare", bare), ("tony", tony))}
med = {k: statistics.median(v) for k, v in tput.items()}
ratio = med["tony"] / med["bare"] if med["bare"] else 0
add("throughput_ratio", ratio >= 0.95, f"tony/bare = {ratio:.3f} (median samples/s {med['tony']:.0f} vs {med['bare']:.0f})")
t = tony[-1]
env = t.get("env", {})
add("cuda_visible_devices", env.get("CUDA_VISIBLE_DEVICES") not in (None, "") and t.get("device_count") == 1,
    f"task saw CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')!r}, torch saw {t.get('device_count')} device(s): {t.get('device_name')}")
add("loss_falls", all(r.get("loss_last", 9e9) < r.get("loss_first", 0) for r in bare + tony),
    "; ".join(f"{r.get('loss_first', 0):.3f}->{r.get('loss_last', 0):.3f}" for r in tony))
add("torchrun_env", env.get("RANK") == "0" and env.get("WORLD_SIZE") == "1" and env.get("MASTER_ADDR"),
    f"RANK={env.get('RANK')} WORLD_SIZE={env.get('WORLD_SIZE')} MASTER_ADDR={env.get('MASTER_ADDR')}")
try:
    st = json.loads((out / "status.json").read_text())
    task = [x for x in st["tasks"] if x["role"] == "worker"][0]
    m, s = task["metrics"], task.get("last_sample", {})
    add("job_json_gpu_metrics", m["MAX_GPU_UTILIZATION"] > 0 and m["MAX_GPU_FB_MEMORY_USAGE"] > 0,
        f"MAX_GPU_UTILIZATION={m['MAX_GPU_UTILIZATION']} AVG={m['AVG_GPU_UTILIZATION']} "
        f"MAX_GPU_FB_MEMORY_USAGE={m['MAX_GPU_FB_MEMORY_USAGE']} last gpu_mem_bytes={s.get('gpu_mem_bytes')}; "
        f"requested {task['requested']}")
except Exception as e:
    add("job_json_gpu_metrics", False, f"status.json: {e}")
try:
    h = json.loads((out / "history.json").read_text())
    ht = [x for x in h["tasks"] if x["role"] == "worker"][0]["metrics"]
    add("history_gpu_metrics", ht["MAX_GPU_UTILIZATION"] > 0 and ht["MAX_GPU_FB_MEMORY_USAGE"] > 0,
        f"history {h['file']}: MAX_GPU_UTILIZATION={ht['MAX_GPU_UTILIZATION']} "
        f"MAX_GPU_FB_MEMORY_USAGE={ht['MAX_GPU_FB_MEMORY_USAGE']}")
except Exception as e:
    add("history_gpu_metrics", False, f"history.json: {e}")
summary = {"gpu": gpu_name, "gpus": ngpu, "torch": t.get("torch"), "runs": runs,
           "samples_per_s": tput, "median_samples_per_s": med, "throughput_ratio_tony_over_bare": ratio,
           "wall_s": walls, "median_wall_s": {k: statistics.median(v) for k, v in walls.items()},
           "bare": bare, "tony": tony, "checks": checks, "passed": all(c["ok"] for c in checks)}
(out / "gpu_proof.json").write_text(json.dumps(summary, indent=1))
print("PASSED" if summary["passed"] else "FAILED", "-", sum(c["ok"] for c in checks), "of", len(checks), "checks")
sys.exit(0 if summary["passed"] else 1)
PYEOF
rc=$?
# The runs' own output, one file (a device's $OUT takes few files).
for f in "$WORK"/*.json "$WORK"/*.err; do echo "== ${f##*/}"; cat "$f"; done >"$OUT_DIR/runs.txt" 2>/dev/null
rm -rf "$WORK"
exit $rc
