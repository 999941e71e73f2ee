#!/usr/bin/env bash
# A server's facts from another machine (issue 38, item 1): the first `envctl doctor PROFILE`
# against the second daemon (another machine: its own UTS namespace, host name gpu2), which
# learns its GPUs with a probe container, and the next one, which reads the daemon's GPU
# record, each against `docker info` on the same endpoint (over TLS, and over ssh through
# an sshd of its own on a loopback port, started by tests/bench/lib/remote.sh).
# Goals: with a probe ≤ 1.5× `docker info`; with the record ≤ 1.0×.
#
#   sudo bash .ci/dockerd2.sh start && sudo tests/bench/remote-facts.sh
#   ENVCTL=target/debug/envctl tests/bench/remote-facts.sh    # another binary (default: release)
#   RUNS=20 tests/bench/remote-facts.sh
#
# Needs root, the second daemon of .ci/dockerd2.sh, Debian's sshd and the test image
# (cargo test builds it). The record is removed before each probed run (untimed); the commands alternate run
# by run, medians and means of $RUNS runs each.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-10}
# shellcheck source=tests/bench/lib/remote.sh
source tests/bench/lib/remote.sh
require_dockerd2
choose_envctl
load_test_image
work=$(mktemp -d)
cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
start_sshd "$work"

mkdir -p "$work/envctl"
printf 'image = "%s"\ngpus = 1\ncommand = ["sleep", "1000"]\n' "$image" >"$work/envctl/bench-facts.toml"
cd "$work"
ENVCTL=$ENVCTL CERTS=$CERTS RUNS=$RUNS D2=$D2 python3 - <<'PYTHON'
import os, statistics, subprocess, time
envctl, runs, d2 = os.environ["ENVCTL"], int(os.environ["RUNS"]), os.environ["D2"]
no_nvml = "/nonexistent/libnvidia-ml.so.1"
ways = {
    "TLS": dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:23760", DOCKER_TLS_VERIFY="1",
                DOCKER_CERT_PATH=os.environ["CERTS"], ENVCTL_NVML_LIBRARY=no_nvml),
    "ssh": dict(os.environ, DOCKER_HOST="ssh://gpu2", ENVCTL_NVML_LIBRARY=no_nvml),
}
forget = ["docker", "-H", d2, "volume", "rm", "-f", "envctl-gpus"]
def timed(command, env):
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
for (way, env), (what, before) in [(w, b) for w in ways.items() for b in (("with a probe", forget), ("with the record", None))]:
    times = {"envctl": [], "docker": []}
    commands = [("envctl", [envctl, "doctor", "bench-facts"]), ("docker", ["docker", "info"])]
    if before is None:
        subprocess.run([envctl, "doctor", "bench-facts"], env=env, stdout=subprocess.DEVNULL)
    for run in range(runs + 1):
        for name, command in commands if run % 2 == 0 else commands[::-1]:
            if before is not None and name == "envctl":
                subprocess.run(before, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            took = timed(command, env)
            if run >= 1:  # one warm-up round
                times[name].append(took)
    e, d = times["envctl"], times["docker"]
    print(f"{way}: doctor {what}: envctl median {statistics.median(e) * 1000:.0f} ms (mean {statistics.mean(e) * 1000:.0f}),"
          f" docker info median {statistics.median(d) * 1000:.0f} ms (mean {statistics.mean(d) * 1000:.0f});"
          f" ratio {statistics.median(e) / statistics.median(d):.2f}x")
PYTHON
