#!/usr/bin/env bash
# Bounded fuzzing of the parsers that read untrusted input: profiles, image references,
# ports, mounts. Each target runs SECONDS (default 15, so about 60 s in all), starting
# from its seed corpus in tests/fuzz-corpus/<target>/ (new inputs go to a scratch copy).
# Needs cargo-fuzz (`cargo install cargo-fuzz`); on a stable toolchain the nightly-only
# sanitizer flags are allowed through RUSTC_BOOTSTRAP.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
export RUSTC_BOOTSTRAP=1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in profile image port mount; do
    mkdir -p "$scratch/$target"
    cp -r tests/fuzz-corpus/"$target"/. "$scratch/$target/"
    echo "== fuzz $target for ${seconds}s"
    (cd fuzz && cargo fuzz run "$target" "$scratch/$target" -- -max_total_time="$seconds" -max_len=65536)
done
