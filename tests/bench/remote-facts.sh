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
#   ENVCTL_BEFORE=/tmp/envctl-old tests/bench/remote-facts.sh  # a second binary, same runs
#
# With the probe it also times the physical floor: `docker run --rm --gpus all IMAGE
# nvidia-smi --query-gpu=…` on the same endpoint, the cheapest thing that learns the GPUs
# through the daemon (one container, no processes, no CUDA version, nothing kept).
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
ENVCTL=$ENVCTL ENVCTL_BEFORE=${ENVCTL_BEFORE:-} CERTS=$CERTS RUNS=$RUNS D2=$D2 IMAGE=$image python3 - <<'PYTHON'
import os, statistics, subprocess, time
envctl, runs, d2 = os.environ["ENVCTL"], int(os.environ["RUNS"]), os.environ["D2"]
before_binary = os.environ.get("ENVCTL_BEFORE") or None
no_nvml = "/nonexistent/libnvidia-ml.so.1"
ways = {
    "TLS": dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:23760", DOCKER_TLS_VERIFY="1",
                DOCKER_CERT_PATH=os.environ["CERTS"], ENVCTL_NVML_LIBRARY=no_nvml),
    "ssh": dict(os.environ, DOCKER_HOST="ssh://gpu2", ENVCTL_NVML_LIBRARY=no_nvml),
}
forget = ["docker", "-H", d2, "volume", "rm", "-f", "envctl-gpus"]
# The physical floor: the cheapest thing that learns a server's GPUs through its daemon, one
# container that the toolkit gives nvidia-smi, run and removed by the docker CLI.
floor = ["docker", "run", "--rm", "--gpus", "all", "-e", "NVIDIA_DRIVER_CAPABILITIES=utility",
         os.environ["IMAGE"], "nvidia-smi",
         "--query-gpu=index,uuid,name,compute_cap,memory.total,memory.used,driver_version",
         "--format=csv,noheader,nounits"]
def timed(command, env):
    start = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
def ms(values):
    return f"{statistics.median(values) * 1000:.0f} ms (mean {statistics.mean(values) * 1000:.0f})"
for (way, env), (what, before) in [(w, b) for w in ways.items() for b in (("with a probe", forget), ("with the record", None))]:
    commands = [("envctl", [envctl, "doctor", "bench-facts"]), ("docker", ["docker", "info"])]
    if before_binary:
        commands.append(("envctl before", [before_binary, "doctor", "bench-facts"]))
    if before is not None:
        commands.append(("floor", floor))
    times = {name: [] for name, _ in commands}
    if before is None:
        subprocess.run([envctl, "doctor", "bench-facts"], env=env, stdout=subprocess.DEVNULL)
    for run in range(runs + 1):
        for name, command in commands if run % 2 == 0 else commands[::-1]:
            if before is not None and name.startswith("envctl"):
                subprocess.run(before, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            took = timed(command, env)
            if run >= 1:  # one warm-up round
                times[name].append(took)
    d = statistics.median(times["docker"])
    said = [f"{name} {ms(values)}, {statistics.median(values) / d:.2f}x docker info"
            for name, values in times.items() if name != "docker"]
    if "floor" in times:
        said.append(f"envctl/floor {statistics.median(times['envctl']) / statistics.median(times['floor']):.2f}x")
        if before_binary:
            said.append(f"before/floor {statistics.median(times['envctl before']) / statistics.median(times['floor']):.2f}x")
    print(f"{way}: doctor {what}: docker info {ms(times['docker'])}; " + "; ".join(said), flush=True)
PYTHON
