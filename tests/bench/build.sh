#!/usr/bin/env bash
# The edit-build-test loop, measured (issue 26): CPU seconds (user + system, which other
# work on the machine changes far less than wall time) and wall seconds of
#   1. a clean debug build of the library, the binaries and every test target, as CI
#      makes it (CARGO_INCREMENTAL=0) and as a developer's first build (incremental),
#   2. touching one file of the core crate, then that crate's unit tests
#      (`cargo test -p envctl-core --lib`: the crate loop),
#   3. touching one file of the core, then one integration module without Docker
#      (`cargo test --test it profile_corpus`),
#   4. touching one command file, then the same integration module (a change to the
#      binary's crate only, which no longer rebuilds the core),
# and the size of the debug integration binary. It builds in a target folder of its own
# (removed at the end), so the developer's is never touched.
#
#   bash tests/bench/build.sh            # all three
#   bash tests/bench/build.sh --no-clean # 2 and 3 only, in ./target
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

CLEAN=true
case "${1:-}" in
--no-clean) CLEAN=false ;;
"") ;;
*)
    echo "error: unknown argument \`$1\`" >&2
    echo "hint: \`bash tests/bench/build.sh\` or \`bash tests/bench/build.sh --no-clean\`" >&2
    exit 2
    ;;
esac

if $CLEAN; then
    TARGET=$(mktemp -d "${TMPDIR:-/tmp}/envctl-bench-build.XXXXXX")
    trap 'rm -rf "$TARGET"' EXIT
    export CARGO_TARGET_DIR="$TARGET"
fi

# measure LABEL COMMAND…: one line `LABEL: CPU s, wall s`.
measure() {
    local label=$1
    shift
    local times
    times=$(mktemp)
    /usr/bin/time -f '%U %S %e' -o "$times" "$@" >/dev/null 2>&1
    read -r user system wall <"$times"
    rm -f "$times"
    printf '%-48s %7.1f s CPU  %7.1f s wall\n' "$label:" "$(echo "$user + $system" | bc)" "$wall"
}

echo "rustc $(rustc --version | cut -d' ' -f2), $(nproc) cores, $(git rev-parse --short HEAD)"
if $CLEAN; then
    # As .ci/run builds a clean clone: no incremental bookkeeping for a build made once.
    measure "clean debug build (lib, bins, tests), as CI" \
        env CARGO_INCREMENTAL=0 cargo build --workspace --tests --locked
    # A developer's first build, incremental (what the loops below then reuse).
    cargo clean --quiet
    measure "clean debug build, incremental" cargo build --workspace --tests --locked
fi
# Warm: the loop starts from a built tree.
cargo test --lib --no-run --locked >/dev/null 2>&1
cargo test --test it --no-run --locked >/dev/null 2>&1
cargo test -p envctl-core --lib --no-run --locked >/dev/null 2>&1
core=crates/envctl-core/src/container_plan/gpus.rs
touch "$core"
measure "touch $core, cargo test -p envctl-core --lib" cargo test -p envctl-core --lib --locked
touch "$core"
measure "touch $core, one integration module" cargo test --test it --locked profile_corpus
touch src/commands/ps.rs
measure "touch src/commands/ps.rs, one integration module" cargo test --test it --locked profile_corpus
binary=$(find "${CARGO_TARGET_DIR:-target}/debug/deps" -maxdepth 1 -type f -name 'it-*' -perm -u+x | head -n 1)
printf '%-48s %7s MiB\n' "debug integration binary:" "$(($(stat -c %s "$binary") / 1048576))"
