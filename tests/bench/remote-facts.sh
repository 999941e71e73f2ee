#!/usr/bin/env bash
# A server's facts from another machine (issue 38, item 1): the first `envctl doctor PROFILE`
# against the second daemon (another machine: its own UTS namespace, host name gpu2), which
# learns its GPUs with a probe container, and the next one, which reads the daemon's GPU
# record, each against `docker info` on the same endpoint (over TLS).
# Goals: with a probe ≤ 1.5× `docker info`; with the record ≤ 1.0×.
#
#   sudo bash .ci/dockerd2.sh start && sudo tests/bench/remote-facts.sh
#   ENVCTL=target/debug/envctl tests/bench/remote-facts.sh    # another binary (default: release)
#   RUNS=20 tests/bench/remote-facts.sh
#
# Needs root, the second daemon of .ci/dockerd2.sh and the test image (cargo test builds
# it). The record is removed before each probed run (untimed); the commands alternate run
# by run, medians and means of $RUNS runs each.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-10}
bash .ci/dockerd2.sh status || {
    echo "error: the second daemon does not answer; start it: sudo bash .ci/dockerd2.sh start" >&2
    exit 1
}
if [ -z "${ENVCTL:-}" ]; then
    cargo build --release -q
    ENVCTL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/envctl
fi
CERTS=/run/envctl-ci/dockerd2-tls
D2=unix:///run/envctl-ci/dockerd2.sock
image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^envctl-test/busybox:' | head -1 || true)
if [ -z "$image" ]; then
    echo "error: no test image envctl-test/busybox:* (cargo test builds it)" >&2
    exit 1
fi
docker save "$image" | docker -H "$D2" load >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/envctl"
printf 'image = "%s"\ngpus = 1\ncommand = ["sleep", "1000"]\n' "$image" >"$work/envctl/bench-facts.toml"
cd "$work"
ENVCTL=$ENVCTL CERTS=$CERTS RUNS=$RUNS D2=$D2 python3 - <<'PYTHON'
import os, statistics, subprocess, time
envctl, runs, d2 = os.environ["ENVCTL"], int(os.environ["RUNS"]), os.environ["D2"]
env = dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:23760", DOCKER_TLS_VERIFY="1",
           DOCKER_CERT_PATH=os.environ["CERTS"], ENVCTL_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
forget = ["docker", "-H", d2, "volume", "rm", "-f", "envctl-gpus"]
def timed(command):
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
for what, before in (("with a probe", forget), ("with the record", None)):
    times = {"envctl": [], "docker": []}
    commands = [("envctl", [envctl, "doctor", "bench-facts"]), ("docker", ["docker", "info"])]
    if before is None:
        subprocess.run([envctl, "doctor", "bench-facts"], env=env, stdout=subprocess.DEVNULL)
    for run in range(runs + 1):
        for name, command in commands if run % 2 == 0 else commands[::-1]:
            if before is not None and name == "envctl":
                subprocess.run(before, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            took = timed(command)
            if run >= 1:  # one warm-up round
                times[name].append(took)
    e, d = times["envctl"], times["docker"]
    print(f"doctor {what}: envctl median {statistics.median(e) * 1000:.0f} ms (mean {statistics.mean(e) * 1000:.0f}),"
          f" docker info median {statistics.median(d) * 1000:.0f} ms (mean {statistics.mean(d) * 1000:.0f});"
          f" ratio {statistics.median(e) / statistics.median(d):.2f}x")
PYTHON
