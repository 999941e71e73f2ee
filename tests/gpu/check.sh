#!/usr/bin/env bash
# tests/gpu/check.sh — envctl against a real NVIDIA GPU, compared with nvidia-smi and torch.
#
# For a machine with an NVIDIA GPU and nothing else: no Docker, no network. It needs
#   - nvidia-smi (comes with the driver),
#   - python3 with a CUDA build of torch,
#   - a prebuilt envctl: $ENVCTL, else `envctl` beside this script, else ./envctl.
#
# Usage: tests/gpu/check.sh [OUTPUT_FOLDER]     (default: $OUT, else ./gpu-check-out)
#
# What it does, in under 10 minutes (every step has its own time limit):
#   1. reads nvidia-smi --query-gpu=… and torch.cuda (the references);
#   2. starts a PyTorch process that holds GPU memory on GPU 0 and runs matrix products;
#   3. while it runs: envctl doctor --json, envctl stats --once --json, nvidia-smi again
#      (GPU and compute-app queries);
#      and the health fields (persistence, ECC mode and counts, retired pages, remapped
#      rows) against envctl's, with nvidia-smi's start-up time;
#   4. envctl compat for this host's driver, GPU and torch build (and the in-place health
#      check, `envctl nvidia-check`, where this envctl has one); then the CUDA libraries
#      installed in this Python's site-packages (torch's, CuPy's, the nvidia-* wheels'),
#      read by envctl (`nvidia-check --libraries`, the image scan's code) and by NVIDIA's
#      `cuobjdump --list-elf/--list-ptx`, library by library, and judged on GPU 0;
#   5. compares them and writes OUTPUT_FOLDER/comparison.md (a table), comparison.json,
#      the raw outputs in OUTPUT_FOLDER/raw/, and a draft stand-in NVML fixture
#      (raw/nvml-fixture.conf, from doctor's NVML facts) for tests/fixtures/nvml/.
#
# Exit status: 0 when every comparison agrees (or was not applicable, said in the table),
# 1 on any disagreement, 2 when the machine lacks what the check needs.
#
# Why the comparisons are what they are:
#   - names, UUIDs, PCI ids, driver version, compute capability, total memory: NVML (envctl)
#     and nvidia-smi read the same driver, so they must be equal (memory within 1 MiB: the
#     nvidia-smi CSV is in MiB); torch's capability must be equal too, its total memory
#     within 5 % (cudaGetDeviceProperties leaves out what the driver reserves).
#   - memory in use and utilisation change from one instant to the next: compared within a
#     tolerance, and "busy" is compared as busy, not as a number.
#   - the load process must appear in envctl's process lists with its memory.
#   - compat: torch ran matrix products on this GPU, so compat must not call this build
#     unable to run here, nor this driver too old for this GPU; torch's own arch list is
#     compared with the matrix's row for this build, where the matrix has one.
#   - libraries: envctl reads fat binaries without cuobjdump, so its SASS and PTX lists of
#     each library must equal cuobjdump's (cuobjdump prints `sm_100f` as `sm_100`, so `f`
#     is dropped before comparing). Its verdict on GPU 0 must equal the one the script
#     derives from cuobjdump's lists (SASS of the GPU's major version and a minor at most
#     the GPU's, `a` code only for that exact GPU, or PTX at most the GPU's); a library
#     whose sibling build for another CUDA release runs (`_cuda118`/`_cuda132`) is judged
#     with its group, as envctl does. torch ran matrix products and CuPy ran a kernel and
#     a cuBLAS product here, so neither's libraries may be called unable to run. cuobjdump
#     runs at most 120 s a library and 240 s in all; what it did not reach is said (n/a).
set -uo pipefail

started=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-./gpu-check-out}}
mkdir -p "$out/raw" || {
    echo "cannot create $out/raw" >&2
    exit 2
}
out=$(cd "$out" && pwd)
raw="$out/raw"

envctl=${ENVCTL:-}
if [[ -z $envctl ]]; then
    if [[ -x "$here/envctl" ]]; then
        envctl="$here/envctl"
    elif [[ -x ./envctl ]]; then
        envctl=./envctl
    fi
fi
missing=()
[[ -n $envctl && -x $envctl ]] || missing+=("envctl (set ENVCTL or copy it beside $0)")
command -v nvidia-smi >/dev/null || missing+=("nvidia-smi")
command -v python3 >/dev/null || missing+=("python3")
command -v timeout >/dev/null || missing+=("timeout (coreutils)")
if ((${#missing[@]})); then
    printf 'missing: %s\n' "${missing[@]}" >&2
    exit 2
fi

# Every tool runs bounded; its exit status is kept beside its output.
run() {
    local name=$1 limit=$2
    shift 2
    timeout --kill-after=5 "$limit" "$@" >"$raw/$name.out" 2>"$raw/$name.err"
    echo $? >"$raw/$name.rc"
}

# No engine is expected here: keep envctl from waiting on a socket that is not there, and
# from reading a user's configuration or profiles.
export NO_COLOR=1
export XDG_CONFIG_HOME="$out/config"
unset ENVCTL_PROFILE_PATH ENVCTL_NVML_LIBRARY
# Only to rehearse this script without a GPU (a stand-in nvidia-smi and torch on PATH and
# PYTHONPATH, the stand-in NVML here); never set on the GPU machine.
if [[ -n ${GPU_CHECK_REHEARSAL_NVML:-} ]]; then
    export ENVCTL_NVML_LIBRARY=$GPU_CHECK_REHEARSAL_NVML
fi
mkdir -p "$XDG_CONFIG_HOME"

sha256sum "$envctl" >"$raw/envctl-sha256.out" 2>&1 || true
uname -m >"$raw/uname-m.out"
[[ -r /etc/nv_tegra_release ]] && head -1 /etc/nv_tegra_release >"$raw/nv_tegra_release.out"

# 1. The references, before the load.
gpu_fields=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,compute_cap
run nvidia-smi-idle 30 nvidia-smi --query-gpu=$gpu_fields --format=csv,noheader,nounits
if [[ $(cat "$raw/nvidia-smi-idle.rc") != 0 ]]; then
    # nvidia-smi before R510 has no compute_cap field: ask without it.
    gpu_fields=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used
    run nvidia-smi-idle 30 nvidia-smi --query-gpu=$gpu_fields --format=csv,noheader,nounits
fi
echo "$gpu_fields" >"$raw/nvidia-smi-fields.out"
if [[ $(cat "$raw/nvidia-smi-idle.rc") != 0 ]]; then
    echo "nvidia-smi --query-gpu failed: $(cat "$raw/nvidia-smi-idle.err")" >&2
    exit 2
fi

run torch-info 90 python3 - <<'PY'
import json, sys
import torch
info = {
    "version": torch.__version__,
    "cuda": torch.version.cuda,
    "available": torch.cuda.is_available(),
}
if info["available"]:
    info["arch_list"] = torch.cuda.get_arch_list()
    info["device_count"] = torch.cuda.device_count()
    info["devices"] = []
    for index in range(torch.cuda.device_count()):
        properties = torch.cuda.get_device_properties(index)
        info["devices"].append({
            "index": index,
            "name": properties.name,
            "capability": "%d.%d" % (properties.major, properties.minor),
            "total_memory": properties.total_memory,
            "uuid": str(getattr(properties, "uuid", "")) or None,
        })
json.dump(info, sys.stdout, indent=1)
PY
if [[ $(cat "$raw/torch-info.rc") != 0 ]]; then
    echo "torch could not be read: $(tail -3 "$raw/torch-info.err")" >&2
    exit 2
fi

# 2. The load: ~1 GiB held on GPU 0 and matrix products until told to stop (at most 150 s).
ready="$raw/load.ready"
stop="$raw/load.stop"
rm -f "$ready" "$stop"
timeout --kill-after=5 170 python3 - "$ready" "$stop" >"$raw/load.out" 2>"$raw/load.err" <<'PY' &
import json, os, sys, time
import torch
ready, stop = sys.argv[1], sys.argv[2]
device = torch.device("cuda:0")
hold = torch.empty(256 * 1024 * 1024, dtype=torch.float32, device=device)  # 1 GiB
hold.fill_(1.0)
a = torch.randn(4096, 4096, device=device)
b = torch.randn(4096, 4096, device=device)
c = a @ b
torch.cuda.synchronize()
products = 1
with open(ready + ".tmp", "w") as file:
    json.dump({
        "pid": os.getpid(),
        "allocated": torch.cuda.memory_allocated(device),
        "reserved": torch.cuda.memory_reserved(device),
        "check": float(c[0, 0]),
    }, file)
os.rename(ready + ".tmp", ready)
deadline = time.time() + 150
while not os.path.exists(stop) and time.time() < deadline:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    products += 20
print(json.dumps({"products": products, "finite": bool(torch.isfinite(c).all())}))
PY
load=$!
for _ in $(seq 1 120); do
    [[ -e $ready ]] && break
    kill -0 "$load" 2>/dev/null || break
    sleep 0.5
done
if [[ ! -e $ready ]]; then
    echo "the PyTorch load did not start: $(tail -3 "$raw/load.err")" >&2
    kill "$load" 2>/dev/null
    exit 2
fi
sleep 3 # let utilisation and NVML's process accounting catch up

# 3. envctl and nvidia-smi while the load runs.
run doctor 90 "$envctl" doctor --json
run stats 45 "$envctl" stats --once --json
run nvidia-smi-load 30 nvidia-smi --query-gpu=index,uuid,memory.used,utilization.gpu --format=csv,noheader,nounits
run nvidia-smi-apps 30 nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits
# Health (issue 43): one query per group, so that a field an older nvidia-smi lacks loses
# only its own group. And nvidia-smi's own start-up time, which persistence mode off costs.
run smi-health-persistence 30 nvidia-smi --query-gpu=index,persistence_mode,ecc.mode.current --format=csv,noheader,nounits
run smi-health-ecc 30 nvidia-smi --query-gpu=index,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.aggregate.total,ecc.errors.uncorrected.aggregate.total --format=csv,noheader,nounits
run smi-health-pages 30 nvidia-smi --query-gpu=index,retired_pages.sbe,retired_pages.dbe,retired_pages.pending --format=csv,noheader,nounits
run smi-health-rows 30 nvidia-smi --query-gpu=index,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv,noheader,nounits
# The single quotes are meant: the inner shell expands the timing, not this one.
# shellcheck disable=SC2016
run smi-start-time 60 bash -c 'for run in 1 2 3; do start=$(date +%s%N); nvidia-smi -L >/dev/null; echo $(( ($(date +%s%N) - start) / 1000000 )); done'

touch "$stop"
wait "$load"
echo $? >"$raw/load.rc"

# 4. compat for this host's driver, GPU and torch build; the in-place check if present.
driver=$(head -1 "$raw/nvidia-smi-idle.out" | awk -F', ' '{print $5}')
gpu_name=$(head -1 "$raw/nvidia-smi-idle.out" | awk -F', ' '{print $2}')
torch_version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$raw/torch-info.out")
platform=$(cat "$raw/uname-m.out")
run compat-gpu 30 "$envctl" compat --json --driver "$driver" --gpu "$gpu_name" --torch "$torch_version" --platform "$platform"
torch_cc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["capability"])' "$raw/torch-info.out")
run compat-cc 30 "$envctl" compat --json --driver "$driver" --cc "$torch_cc" --torch "$torch_version" --platform "$platform"
if "$envctl" nvidia-check --help >/dev/null 2>&1; then
    run nvidia-check 120 "$envctl" nvidia-check --json
else
    echo "this envctl has no in-place nvidia-check" >"$raw/nvidia-check.skipped"
fi

# 4b. The CUDA libraries installed here: envctl's lists and verdicts, cuobjdump's lists.
python3 -c 'import json, sysconfig; print(json.dumps(sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})))' \
    >"$raw/site-packages.out" 2>"$raw/site-packages.err"
mapfile -t site_folders < <(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))))' "$raw/site-packages.out" 2>/dev/null)
cuobjdump=$(command -v cuobjdump || true)
if [[ -z $cuobjdump && -x /usr/local/cuda/bin/cuobjdump ]]; then
    cuobjdump=/usr/local/cuda/bin/cuobjdump
fi
if [[ -z $cuobjdump ]]; then
    # The nvidia-cuda-cuobjdump wheel puts it under site-packages/nvidia/cuda_cuobjdump/bin.
    for folder in "${site_folders[@]}"; do
        [[ -z $cuobjdump && -x $folder/nvidia/cuda_cuobjdump/bin/cuobjdump ]] &&
            cuobjdump=$folder/nvidia/cuda_cuobjdump/bin/cuobjdump
    done
fi
echo "${cuobjdump:-none}" >"$raw/cuobjdump-path.out"
library_arguments=()
for folder in "${site_folders[@]}"; do
    [[ -d $folder ]] && library_arguments+=(--libraries "$folder")
done
if ((${#library_arguments[@]} == 0)); then
    echo "no site-packages folder found: $(cat "$raw/site-packages.err")" >"$raw/libraries.skipped"
elif ! "$envctl" nvidia-check --libraries / --help >/dev/null 2>&1; then
    echo "this envctl cannot scan installed libraries (nvidia-check --libraries)" >"$raw/libraries.skipped"
else
    run libraries 300 "$envctl" nvidia-check --quick --json "${library_arguments[@]}"
    # CuPy, where installed, runs a kernel and a cuBLAS product: its libraries ran here.
    run cupy-run 120 python3 -c 'import cupy; a = cupy.arange(1024, dtype=cupy.float32).reshape(32, 32); print(float((a @ a).sum()), cupy.__file__)'
    if [[ -n $cuobjdump ]]; then
        run cuobjdump-lists 260 python3 - "$raw/libraries.out" "$cuobjdump" <<'PY'
import json, re, subprocess, sys, time

report, cuobjdump = sys.argv[1], sys.argv[2]
try:
    libraries = json.load(open(report))["libraries"]["libraries"]
except (ValueError, KeyError, TypeError) as error:
    json.dump({"error": "envctl's library list could not be read: %s" % error}, sys.stdout)
    sys.exit(0)
budget = time.monotonic() + 240
lists = {}
for library in libraries:
    path = library["path"]
    if time.monotonic() > budget:
        lists[path] = {"error": "not reached within the 240 s budget"}
        continue
    found = {}
    for flag, key, suffix in (("--list-elf", "sass", "cubin"), ("--list-ptx", "ptx", "ptx")):
        try:
            done = subprocess.run([cuobjdump, flag, path], capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            found["error"] = "cuobjdump %s ran past 120 s" % flag
            continue
        names = re.findall(r"\.(sm_\d+[a-z]?)\.%s$" % suffix, done.stdout, re.M)
        found[key] = sorted(set(names), key=lambda name: (int(re.sub(r"\D", "", name)), name))
        if done.returncode != 0:
            found["error"] = "cuobjdump %s: exit %d: %s" % (flag, done.returncode, done.stderr.strip()[:200])
    lists[path] = found
json.dump(lists, sys.stdout, indent=1)
PY
    else
        echo "no cuobjdump (PATH, /usr/local/cuda/bin, the nvidia-cuda-cuobjdump wheel)" >"$raw/cuobjdump-lists.skipped"
    fi
fi

# 5. Compare.
python3 - "$raw" "$out" <<'PY'
import json, os, re, sys

raw, out = sys.argv[1], sys.argv[2]
MIB = 1024 * 1024
rows = []  # (subject, envctl, reference, verdict): agree | DISAGREE | n/a


def add(subject, ours, reference, verdict):
    rows.append({"subject": subject, "envctl": str(ours), "reference": str(reference), "verdict": verdict})


def same(subject, ours, reference):
    add(subject, ours, reference, "agree" if ours == reference else "DISAGREE")


def text(name):
    path = os.path.join(raw, name)
    return open(path).read() if os.path.exists(path) else ""


def document(name):
    try:
        return json.loads(text(name + ".out"))
    except ValueError:
        return None


def rc(name):
    value = text(name + ".rc").strip()
    return int(value) if value else None


def value(fact):
    """envctl's Fact: {"value": …} or {"error": …}."""
    return fact.get("value") if isinstance(fact, dict) else None


fields = text("nvidia-smi-fields.out").strip().split(",")
smi = []
for line in text("nvidia-smi-idle.out").splitlines():
    if line.strip():
        smi.append(dict(zip(fields, [part.strip() for part in line.split(", ")])))
torch_info = document("torch-info")
load_ready = json.loads(text("load.ready") or "{}")
load_pid = load_ready.get("pid")

# doctor: NVML's facts.
doctor = document("doctor")
nvml = (doctor or {}).get("host", {}).get("gpu", {}).get("nvml", {})
if not doctor:
    add("doctor --json", "exit %s, no JSON" % rc("doctor"), "a document", "DISAGREE")
elif nvml.get("outcome") != "loaded":
    add("doctor: NVML", nvml.get("outcome"), "loaded", "DISAGREE")
else:
    same("driver version", value(nvml.get("driver_version")), smi[0].get("driver_version"))
    same("GPU count", value(nvml.get("device_count")), len(smi))
    if torch_info and torch_info.get("available"):
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        count = torch_info.get("device_count")
        add("GPU count (torch)", value(nvml.get("device_count")), count,
            "agree" if count == value(nvml.get("device_count")) else
            ("n/a (CUDA_VISIBLE_DEVICES=%s)" % visible if visible is not None else "DISAGREE"))
    gpus = {gpu.get("index"): gpu for gpu in nvml.get("gpus", [])}
    for row in smi:
        index = int(row["index"])
        gpu = gpus.get(index)
        if gpu is None:
            add("GPU %d" % index, "absent", "present", "DISAGREE")
            continue
        same("GPU %d name" % index, value(gpu.get("name")), row.get("name"))
        same("GPU %d uuid" % index, value(gpu.get("uuid")), row.get("uuid"))
        same("GPU %d PCI bus id" % index, (value(gpu.get("pci_bus_id")) or "").upper(),
             (row.get("pci.bus_id") or "").upper())
        if "compute_cap" in row:
            same("GPU %d compute capability" % index, value(gpu.get("compute_capability")), row["compute_cap"])
        memory = value(gpu.get("memory")) or {}
        total = memory.get("total_bytes")
        reference = int(row["memory.total"]) * MIB
        add("GPU %d memory total (MiB)" % index, total and total // MIB, reference // MIB,
            "agree" if total is not None and abs(total - reference) < MIB else "DISAGREE")
        if torch_info and torch_info.get("available") and index < len(torch_info.get("devices", [])):
            device = torch_info["devices"][index]
            same("GPU %d capability (torch)" % index, value(gpu.get("compute_capability")), device["capability"])
            ratio = total / device["total_memory"] if total else 0
            add("GPU %d memory total vs torch" % index, total, device["total_memory"],
                "agree" if 0.95 <= ratio <= 1.05 else "DISAGREE")
    # The load process, seen by doctor's NVML process list of GPU 0.
    processes = value(gpus.get(0, {}).get("processes")) or []
    found = [process for process in processes if process.get("pid") == load_pid]
    add("doctor: load process on GPU 0", found and found[0], "pid %s" % load_pid,
        "agree" if found else "DISAGREE")

# Health facts (issue 43) against nvidia-smi's: "[N/A]" / "[Not Supported]" there must be
# an error fact in envctl (unknown), never a zero.
def smi_rows(name):
    rows_by_index = {}
    for line in text(name + ".out").splitlines():
        parts = [part.strip() for part in line.split(", ")]
        if parts and parts[0].isdigit():
            rows_by_index[int(parts[0])] = parts[1:]
    return rows_by_index


def smi_value(part):
    if part.startswith("[") or part in ("N/A", ""):
        return None
    lowered = part.lower()
    if lowered in ("enabled", "yes"):
        return True
    if lowered in ("disabled", "no"):
        return False
    return int(part) if part.isdigit() else part


def health_compare(subject, ours, reference):
    add(subject, ours, reference, "agree" if ours == reference else "DISAGREE")


if doctor and nvml.get("outcome") == "loaded":
    for gpu in nvml.get("gpus", []):
        index = gpu.get("index")
        health = gpu.get("health") or {}
        if not health:
            add("GPU %s health facts" % index, "absent", "present", "DISAGREE")
            continue
        persistence = smi_rows("smi-health-persistence").get(index)
        if persistence:
            health_compare("GPU %s persistence mode" % index, value(health.get("persistence_mode")), smi_value(persistence[0]))
            health_compare("GPU %s ECC mode" % index, value(health.get("ecc_enabled")), smi_value(persistence[1]))
        ecc = smi_rows("smi-health-ecc").get(index)
        if ecc:
            volatile = value(health.get("ecc_volatile")) or {}
            aggregate = value(health.get("ecc_aggregate")) or {}
            for label, ours, part in (
                ("ECC volatile corrected", volatile.get("corrected"), ecc[0]),
                ("ECC volatile uncorrected", volatile.get("uncorrected"), ecc[1]),
                ("ECC aggregate corrected", aggregate.get("corrected"), ecc[2]),
                ("ECC aggregate uncorrected", aggregate.get("uncorrected"), ecc[3]),
            ):
                health_compare("GPU %s %s" % (index, label), ours, smi_value(part))
        pages = smi_rows("smi-health-pages").get(index)
        if pages:
            retired = value(health.get("retired_pages")) or {}
            health_compare("GPU %s retired pages (single-bit)" % index, retired.get("single_bit"), smi_value(pages[0]))
            health_compare("GPU %s retired pages (double-bit)" % index, retired.get("double_bit"), smi_value(pages[1]))
            health_compare("GPU %s retired pages pending" % index, value(health.get("retired_pages_pending")), smi_value(pages[2]))
        remapped = smi_rows("smi-health-rows").get(index)
        if remapped:
            rows_fact = value(health.get("remapped_rows")) or {}
            for label, key, part in (
                ("remapped rows correctable", "correctable", remapped[0]),
                ("remapped rows uncorrectable", "uncorrectable", remapped[1]),
                ("remapped rows pending", "pending", remapped[2]),
                ("remapped rows failure", "failure", remapped[3]),
            ):
                reference = smi_value(part)
                # nvidia-smi writes pending and failure as 0/1 on some drivers.
                if key in ("pending", "failure") and isinstance(reference, int):
                    reference = bool(reference)
                health_compare("GPU %s %s" % (index, label), rows_fact.get(key), reference)
    starts = [line.strip() for line in text("smi-start-time.out").splitlines() if line.strip()]
    persistence_on = all(value((gpu.get("health") or {}).get("persistence_mode")) for gpu in nvml.get("gpus", []))
    add("nvidia-smi start-up (ms, persistence %s)" % ("on" if persistence_on else "off"),
        ", ".join(starts), "measured", "n/a (a measurement)")

# nvidia-smi's view of the load.
apps = []
for line in text("nvidia-smi-apps.out").splitlines():
    parts = [part.strip() for part in line.split(", ")]
    if len(parts) == 3 and parts[0].isdigit():
        apps.append({"pid": int(parts[0]), "uuid": parts[1], "used_mib": parts[2]})
load_app = [app for app in apps if app["pid"] == load_pid]
busy = {}
used = {}
for line in text("nvidia-smi-load.out").splitlines():
    parts = [part.strip() for part in line.split(", ")]
    if len(parts) == 4 and parts[0].isdigit():
        used[int(parts[0])] = int(parts[2]) * MIB if parts[2].isdigit() else None
        busy[int(parts[0])] = int(parts[3]) if parts[3].isdigit() else None

# stats: needs a container engine for its container half; on a machine without one it may
# refuse to run, which is said, not counted as a disagreement.
stats = document("stats")
if stats is None:
    add("stats --once --json", "exit %s: %s" % (rc("stats"), text("stats.err").strip()[:200]),
        "a snapshot", "n/a (stats needs a container engine; none here)" if rc("stats") != 0 else "DISAGREE")
else:
    rows_gpu = {row.get("index"): row for row in stats.get("gpus", [])}
    row = rows_gpu.get(0)
    if row is None:
        add("stats: GPU 0", "absent", "present", "DISAGREE")
    else:
        ours = row.get("memory_used_bytes")
        reference = used.get(0)
        add("stats: GPU 0 memory used (MiB)", ours and ours // MIB, reference and reference // MIB,
            "agree" if ours is not None and reference is not None and abs(ours - reference) <= 256 * MIB
            else "DISAGREE")
        utilisation = row.get("utilization_percent")
        add("stats: GPU 0 busy under matmul", utilisation, busy.get(0),
            "agree" if (utilisation or 0) > 0 and (busy.get(0) or 0) > 0 else "DISAGREE")
        processes = [p for p in row.get("processes", []) if p.get("pid") == load_pid]
        add("stats: load process on GPU 0", processes and processes[0], load_app and load_app[0],
            "agree" if processes and load_app else "DISAGREE")
        if processes and load_app and processes[0].get("used_memory_bytes") is not None:
            ours = processes[0]["used_memory_bytes"] // MIB
            reference = int(load_app[0]["used_mib"]) if load_app[0]["used_mib"].isdigit() else None
            add("stats: load process memory (MiB)", ours, reference,
                "agree" if reference is not None and abs(ours - reference) <= 1 else "DISAGREE")

# compat: torch ran matrix products here, so the verdicts must not say it cannot.
def compat_checks(name, label):
    report = document(name)
    if report is None:
        code = rc(name)
        add(label, "exit %s: %s" % (code, text(name + ".err").strip()[:200]), "a verdict",
            "n/a (GPU name not in the matrix)" if code == 2 and name == "compat-gpu" else "DISAGREE")
        return
    gpu = report["gpus"][0]
    if torch_info and torch_info.get("devices"):
        same(label + ": capability", gpu.get("compute_capability"), torch_info["devices"][0]["capability"])
    findings = {finding["id"]: finding for finding in gpu["findings"]}
    ran = load_ready.get("check") is not None and "true" in text("load.out").lower()
    for key in ("driver.architecture", "driver.cuda", "gpu.torch-arch"):
        finding = findings.get(key)
        if finding is None:
            add("%s: %s" % (label, key), "absent", "-", "n/a")
            continue
        add("%s: %s" % (label, key), "%s: %s" % (finding["status"], finding["message"][:160]),
            "torch ran matmuls" if ran else "torch did not finish",
            "DISAGREE" if ran and finding["status"] == "fail" else "agree")
    build = (findings.get("gpu.torch-arch") or {}).get("facts", {}).get("build_row")
    if build and torch_info and torch_info.get("arch_list") is not None:
        ours = sorted(build["targets"] + ([build["ptx"]] if build.get("ptx") else []))
        theirs = sorted(torch_info["arch_list"])
        same(label + ": arch list (matrix row vs torch.cuda.get_arch_list())", ours, theirs)

compat_checks("compat-gpu", "compat --gpu")
compat_checks("compat-cc", "compat --cc")
if os.path.exists(os.path.join(raw, "nvidia-check.skipped")):
    add("in-place nvidia-check", "not in this envctl", "-", "n/a")
elif document("nvidia-check") is not None:
    check = document("nvidia-check")
    add("in-place nvidia-check", check.get("verdict"), "torch ran matmuls",
        "DISAGREE" if check.get("verdict") == "fail" else "agree")

# The CUDA libraries installed here: envctl's lists against cuobjdump's, and envctl's
# verdict on GPU 0 against the one cuobjdump's lists give.
def sm_number(name):
    return int(re.sub(r"\D", "", name.split("_", 1)[1]))


def runs_on(sass, ptx, capability):
    """Whether code with these cuobjdump lists runs on a GPU of `capability` ("9.0")."""
    major, minor = (int(part) for part in capability.split("."))
    gpu = major * 10 + minor
    for name in sass:
        number = sm_number(name)
        if name.endswith("a"):
            if number == gpu:
                return True
        elif number // 10 == major and number % 10 <= minor:
            return True
    return any(sm_number(name) <= gpu for name in ptx)


def group_key(path):
    return re.sub(r"(_cuda|_cu|-cuda|-cu)\d{2,}", r"\1*", path)


if os.path.exists(os.path.join(raw, "libraries.skipped")):
    add("installed CUDA libraries", text("libraries.skipped").strip(), "-", "n/a")
elif document("libraries") is None or "libraries" not in document("libraries"):
    add("installed CUDA libraries", "exit %s: %s" % (rc("libraries"), text("libraries.err").strip()[-300:]),
        "a list", "DISAGREE")
else:
    scanned = document("libraries")["libraries"]
    libraries = scanned["libraries"]
    add("installed CUDA libraries: shared objects read / with GPU code / unreadable",
        "%d / %d / %d" % (scanned["shared_objects"], len(libraries), len(scanned["unreadable"])),
        "-", "agree" if not scanned["unreadable"] else "DISAGREE")
    for unread in scanned["unreadable"]:
        add("library %s" % unread["path"], "unreadable: %s" % unread["why"][:160], "-", "DISAGREE")
    judged = [finding for finding in document("libraries")["findings"] if finding["id"] == "gpu.library-arch"]
    failing = [finding["message"] for finding in judged if finding["status"] != "pass"]
    named = lambda path: any(path in message for message in failing)
    capability = torch_info["devices"][0]["capability"] if torch_info and torch_info.get("devices") else None
    if libraries and capability:
        # torch saw a GPU: envctl must have judged the libraries on it (a pass or a failure).
        add("installed CUDA libraries judged on the GPUs nvidia-check saw",
            "%d gpu.library-arch findings" % len(judged), "torch sees sm_%s" % capability.replace(".", ""),
            "agree" if judged else "DISAGREE")
    cuobjdump_lists = document("cuobjdump-lists")
    cupy_ran = rc("cupy-run") == 0
    add("CuPy ran a kernel and a cuBLAS product", "exit %s" % rc("cupy-run"),
        text("cupy-run.err").strip()[-160:] or "-", "agree" if cupy_ran else "n/a (no CuPy)")
    reference_runs = {}
    for library in libraries:
        path = library["path"]
        ours_sass = [re.sub(r"f$", "", name) for name in library["code"]["sass"]]
        ours_ptx = ["sm_" + ptx["target"].split("_", 1)[1].rstrip("af") for ptx in library["code"]["ptx"]]
        ours_sass = sorted(set(ours_sass), key=lambda name: (sm_number(name), name))
        ours_ptx = sorted(set(ours_ptx), key=lambda name: (sm_number(name), name))
        theirs = (cuobjdump_lists or {}).get(path) if isinstance(cuobjdump_lists, dict) else None
        if os.path.exists(os.path.join(raw, "cuobjdump-lists.skipped")):
            add("%s: lists" % path, "%s / %s" % (ours_sass, ours_ptx), text("cuobjdump-lists.skipped").strip(), "n/a")
        elif theirs is None or "sass" not in theirs or "ptx" not in theirs:
            add("%s: lists" % path, "%s / %s" % (ours_sass, ours_ptx),
                (theirs or {}).get("error", "cuobjdump gave nothing"), "n/a")
        else:
            verdict = "agree" if (ours_sass, ours_ptx) == (theirs["sass"], theirs["ptx"]) else "DISAGREE"
            if verdict == "DISAGREE" and theirs.get("error"):
                verdict = "n/a (cuobjdump failed part-way)"
            add("%s: SASS / PTX" % path, "%s / %s" % (ours_sass, ours_ptx),
                "%s / %s%s" % (theirs["sass"], theirs["ptx"], " (%s)" % theirs["error"] if theirs.get("error") else ""),
                verdict)
            if capability:
                reference_runs[path] = runs_on(theirs["sass"], theirs["ptx"], capability)
    # Verdicts on GPU 0: per variant group, as envctl judges them.
    groups = {}
    for library in libraries:
        groups.setdefault(group_key(library["path"]), []).append(library["path"])
    for key, paths in sorted(groups.items()):
        if not capability:
            add("%s: verdict" % key, "-", "torch saw no GPU", "n/a")
            continue
        known = [path for path in paths if path in reference_runs]
        if not known:
            continue
        theirs = any(reference_runs[path] for path in known)
        ours = not any(named(path) for path in paths)
        subject = "%s: runs on GPU 0 (sm_%s)" % (key, capability.replace(".", ""))
        reference = "cuobjdump's lists: %s" % ("runs" if theirs else "no code for it")
        ran_here = ("/torch/lib/" in key and "libtorch_cuda" in key) or (cupy_ran and "/cupy/" in key)
        if ran_here and not ours:
            add(subject, "named as unable to run", "it ran here", "DISAGREE")
            continue
        add(subject, "runs" if ours else "named as unable to run", reference,
            "agree" if ours == theirs else "DISAGREE")

# A draft stand-in NVML fixture from doctor's NVML facts (exact bytes, as NVML said them).
if nvml.get("outcome") == "loaded":
    lines = ["# Drafted by tests/gpu/check.sh from envctl doctor --json on a real GPU (the load ran on GPU 0)."]
    for key in ("driver_version", "nvml_version"):
        if value(nvml.get(key)) is not None:
            lines.append("%s=%s" % (key, value(nvml.get(key))))
    cuda = value(nvml.get("cuda_driver_version"))
    if cuda:
        major, minor = (cuda.split(".") + ["0"])[:2]
        lines.append("cuda_driver_version=%d" % (int(major) * 1000 + int(minor) * 10))
    lines.append("device_count=%s" % value(nvml.get("device_count")))
    for gpu in nvml.get("gpus", []):
        prefix = "gpu.%s." % gpu.get("index")
        for field in ("name", "uuid", "pci_bus_id", "compute_capability"):
            if value(gpu.get(field)) is not None:
                lines.append(prefix + "%s=%s" % (field, value(gpu.get(field))))
        memory = value(gpu.get("memory")) or {}
        for field, key in (("memory_total", "total_bytes"), ("memory_used", "used_bytes"), ("memory_reserved", "reserved_bytes")):
            if memory.get(key) is not None:
                lines.append(prefix + "%s=%s" % (field, memory[key]))
        power = value(gpu.get("power_limit_watts"))
        if power is not None:
            lines.append(prefix + "power_limit_milliwatts=%d" % round(power * 1000))
        minor_number = value(gpu.get("minor_number"))
        if minor_number is not None:
            lines.append(prefix + "minor_number=%s" % minor_number)
        processes = value(gpu.get("processes")) or []
        listed = ["%s:%s" % (p.get("pid"), p.get("used_memory_bytes")) for p in processes
                  if p.get("pid") is not None and p.get("used_memory_bytes") is not None]
        if listed:
            lines.append(prefix + "processes=" + ",".join(listed))
    with open(os.path.join(raw, "nvml-fixture.conf"), "w") as file:
        file.write("\n".join(lines) + "\n")

disagreements = [row for row in rows if row["verdict"] == "DISAGREE"]
with open(os.path.join(out, "comparison.json"), "w") as file:
    json.dump({"rows": rows, "disagreements": len(disagreements)}, file, indent=1)
cell = lambda value: value.replace("|", "\\|").replace("\n", " ")
with open(os.path.join(out, "comparison.md"), "w") as file:
    file.write("| subject | envctl | reference | verdict |\n|---|---|---|---|\n")
    for row in rows:
        file.write("| %s | %s | %s | %s |\n" % tuple(cell(row[key]) for key in ("subject", "envctl", "reference", "verdict")))
    file.write("\n%d comparisons, %d disagreements\n" % (len(rows), len(disagreements)))
print(open(os.path.join(out, "comparison.md")).read())
sys.exit(1 if disagreements else 0)
PY
status=$?
echo "finished in $(($(date +%s) - started)) s; results in $out" >&2
exit $status
