#!/usr/bin/env bash
# `envctl exec TARGET nvidia-check` against `docker exec` of the very same script, and
# `envctl exec` against `docker exec` for a trivial command.
# Goal (issue "exec and nvidia-check"): nvidia-check ≤ 1.1× docker exec of the script.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v hyperfine >/dev/null || apt-get install -y -q hyperfine >/dev/null
cargo build --release -q
ENVCTL=${ENVCTL:-$(realpath "${CARGO_TARGET_DIR:-target}")/release/envctl}
IMAGE=${IMAGE:-$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^envctl-test/busybox:' | head -1)}
[ -n "$IMAGE" ] || { echo "no test image: run \`cargo test --test it docker_support::\` once" >&2; exit 2; }
work=$(mktemp -d)
profile=bench-exec-$$
cleanup() { docker rm -f "envctl-$profile" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/envctl"
printf 'image = "%s"\nmemory = "128m"\n' "$IMAGE" > "$work/envctl/$profile.toml"
cd "$work"
"$ENVCTL" up "$profile" -q >/dev/null
SCRIPT=$(cat "$OLDPWD/crates/envctl-core/src/nvcheck/nvidia_check.sh")
PYTHON=$(cat "$OLDPWD/crates/envctl-core/src/nvcheck/nvidia_check.py")
export SCRIPT PYTHON
hyperfine --warmup 3 --runs 20 -i \
    -n "envctl nvidia-check" "$ENVCTL exec $profile nvidia-check --quick --json" \
    -n "docker exec (same script)" "docker exec envctl-$profile sh -c \"\$SCRIPT\" envctl-nvidia-check \"\$PYTHON\" 120 1" \
    -n "envctl exec true" "$ENVCTL exec $profile -- true" \
    -n "docker exec true" "docker exec envctl-$profile true"
