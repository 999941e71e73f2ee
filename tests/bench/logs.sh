#!/usr/bin/env bash
# `envctl logs` against `docker logs` for 20 MB written without a newline, by a TTY
# container (the raw stream) and by a plain one (the multiplexed stream), as issue 12
# measured it. Best of 5 runs each, output to /dev/null.
#
#   tests/bench/logs.sh                       # target/release/envctl
#   ENVCTL=target/debug/envctl tests/bench/logs.sh
set -euo pipefail
ENVCTL=${ENVCTL:-target/release/envctl}
IMAGE=${IMAGE:-$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^envctl-test/busybox:' | head -1)}
[ -n "$IMAGE" ] || { echo "no envctl-test/busybox image: run cargo test once" >&2; exit 2; }
names=()
cleanup() { [ ${#names[@]} -eq 0 ] || docker rm -f "${names[@]}" >/dev/null; }
trap cleanup EXIT
best() { # best wall time of 5 runs of "$@", in seconds
    local best=999 start end took
    for _ in 1 2 3 4 5; do
        start=$(date +%s.%N); "$@" >/dev/null 2>&1; end=$(date +%s.%N)
        took=$(echo "$end - $start" | bc); (( $(echo "$took < $best" | bc) )) && best=$took
    done
    printf '%.3f' "$best"
}
for tty in -t ""; do
    name="envctl-bench-logs-$$-${tty:+tty}${tty:-plain}"
    names+=("$name")
    docker run -d $tty --name "$name" --label envctl.test=1 "$IMAGE" \
        sh -c 'head -c 20971520 /dev/zero | tr "\0" x; sleep 600' >/dev/null
    until [ "$(docker logs "$name" 2>/dev/null | wc -c)" -ge 20971520 ]; do sleep 0.5; done
    envctl=$(best "$ENVCTL" logs "$name")
    docker=$(best docker logs "$name")
    label=$([ -n "$tty" ] && echo TTY || echo "no TTY")
    echo "$label: envctl logs ${envctl} s, docker logs ${docker} s"
done
