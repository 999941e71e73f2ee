#!/usr/bin/env bash
# Benchmark (issue 29): a GPU container in a Slurm job, made by `envctl run` against the same
# job running `docker run` by hand. Measured per round, from this script's clock:
#   start  `sbatch` → the container is running (polled every 10 ms)
#   end    `scancel` → the container is gone
#
# Usage (as root, with `bash .ci/slurm.sh start` and `bash .ci/dockerd2.sh start` running):
#   tests/bench/slurm.sh [--rounds N]
#
# Environment:
#   ENVCTL  the envctl binary (default: target/release/envctl, else target/debug/envctl)
#   SLURM_CONF (default /run/envctl-ci/slurm/etc/slurm.conf), IMAGE (default: the test
#   image `envctl-test/busybox:*` on the second daemon).
#
# Both jobs ask for `--gres=gpu:2` on n1 and end their script with `exec`: envctl run
# (`gpus = "all"`: the job's two GPUs, pinned by UUID), and by hand the line a user
# writes, `docker run --rm --init --gpus '"device=$SLURM_JOB_GPUS"' IMAGE sleep 1000` (the
# docker CLI passes scancel's SIGTERM on and `--rm` removes the container; without the
# inner quotes the CLI reads `device=2,3` as two options and refuses). By hand, with
# ConstrainDevices=yes, `--gpus device=$CUDA_VISIBLE_DEVICES` would take other jobs' GPUs:
# SLURM_JOB_GPUS holds the host's indices.
set -euo pipefail

ROUNDS=5
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export SLURM_CONF=${SLURM_CONF:-/run/envctl-ci/slurm/etc/slurm.conf}
D2=unix:///run/envctl-ci/dockerd2.sock
ENVCTL=${ENVCTL:-}
if [ -z "$ENVCTL" ]; then
    for candidate in "$ROOT/target/release/envctl" "$ROOT/target/debug/envctl"; do
        [ -x "$candidate" ] && ENVCTL=$candidate && break
    done
fi
STUB=$(ls "$ROOT"/target/debug/deps/libenvctl_nvml_stub.so 2>/dev/null | head -n 1)
IMAGE=${IMAGE:-$(docker -H "$D2" images --format '{{.Repository}}:{{.Tag}}' | grep '^envctl-test/busybox:' | head -n 1)}
for what in "$ENVCTL:envctl (cargo build)" "$STUB:the stand-in NVML (cargo test --no-run)" "$IMAGE:the test image on the second daemon (cargo test --test it slurm::)"; do
    [ -n "${what%%:*}" ] || { echo "error: missing ${what#*:}" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/envctl-bench-slurm.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/envctl"
printf 'image = "%s"\ngpus = "all"\n' "$IMAGE" >"$WORK/envctl/bench.toml"
# Four stand-in GPUs whose minor numbers are their indices (Slurm's File=…/nvidia[0-3]).
grep -v '^gpu\.[4-7]\.' "$ROOT/tests/fixtures/nvml/healthy-8x-h100.conf" |
    sed 's/^device_count=8/device_count=4/' >"$WORK/gpus.conf"
for i in 0 1 2 3; do echo "gpu.$i.minor_number=$i" >>"$WORK/gpus.conf"; done
cat >"$WORK/envctl.sh" <<EOF
#!/bin/sh
export DOCKER_HOST=$D2 ENVCTL_NVML_LIBRARY=$STUB ENVCTL_NVML_STUB_FIXTURE=$WORK/gpus.conf ENVCTL_GPU_LOCK=$WORK/gpus.lock HOME=$WORK
cd $WORK
# The second daemon is another machine named gpu2 (.ci/dockerd2.sh); the node stands in for
# it, so envctl runs under its host name and the stand-in NVML is the daemon's machine's.
exec unshare --uts -- sh -c 'hostname gpu2 && exec "\$0" "\$@"' $ENVCTL -q run bench --force -- sleep 1000
EOF
cat >"$WORK/docker.sh" <<EOF
#!/bin/sh
exec docker -H $D2 run --rm --init --label envctl.slurm-job=\$SLURM_JOB_ID --gpus "\"device=\$SLURM_JOB_GPUS\"" $IMAGE sleep 1000
EOF
chmod +x "$WORK"/*.sh

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
running() { [ -n "$(docker -H "$D2" ps -q --filter "label=envctl.slurm-job=$1" --filter status=running)" ]; }
present() { [ -n "$(docker -H "$D2" ps -aq --filter "label=envctl.slurm-job=$1")" ]; }

one() { # SCRIPT → "start end"
    local started job start end
    started=$(now)
    job=$(sbatch --parsable -w n1 --gres=gpu:2 -o /dev/null "$1")
    for _ in $(seq 3000); do running "$job" && break; sleep 0.01; done
    start=$(since "$started")
    started=$(now)
    scancel "$job"
    for _ in $(seq 3000); do present "$job" || break; sleep 0.01; done
    end=$(since "$started")
    # The next job waits for this one to be gone from Slurm too.
    for _ in $(seq 500); do
        squeue -h -j "$job" 2>/dev/null | grep -q . || break
        sleep 0.02
    done
    echo "$start $end"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

: >"$WORK/envctl.times"
: >"$WORK/docker.times"
for round in $(seq "$ROUNDS"); do
    # Alternate the order: the scheduler's passes and the daemon's load drift.
    if [ $((round % 2)) = 1 ]; then order="envctl docker"; else order="docker envctl"; fi
    for which in $order; do
        one "$WORK/$which.sh" >>"$WORK/$which.times"
    done
done
printf '%-8s %18s %18s   (median of %s, seconds)\n' "" "sbatch → running" "scancel → gone" "$ROUNDS"
for which in envctl docker; do
    printf '%-8s %18s %18s\n' "$which" "$(cut -d' ' -f1 "$WORK/$which.times" | median)" \
        "$(cut -d' ' -f2 "$WORK/$which.times" | median)"
done
