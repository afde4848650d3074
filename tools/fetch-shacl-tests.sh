#!/usr/bin/env bash
# Fetch the W3C SHACL test suite (and the DASH core test cases) as shipped in pySHACL's source
# distribution, for the installed pySHACL version, into .cache/shacl-tests/pyshacl-<version>/.
# Idempotent and fast when the files are already there; concurrent runs download once. Prints the folder holding sht_tests/.
#
#   tools/fetch-shacl-tests.sh            # uses .venv/bin/python (or $PYTHON)
#   PIP_INDEX_URL=… tools/fetch-shacl-tests.sh   # pip's usual settings apply
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
VERSION="$("$PY" -c 'from importlib.metadata import version; print(version("pyshacl"))')"
CACHE="${SHACL_TESTS_CACHE:-$ROOT/.cache/shacl-tests}"
TARGET="$CACHE/pyshacl-$VERSION"

if [ -f "$TARGET/sht_tests/manifest.ttl" ] && [ -d "$TARGET/dash_tests/core" ]; then
    echo "$TARGET"
    exit 0
fi

mkdir -p "$CACHE"
# One download at a time: a second run (another test session, a parallel worker) waits for the
# first and then finds the files there.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE/.fetch.lock"
    flock 9
    if [ -f "$TARGET/sht_tests/manifest.ttl" ] && [ -d "$TARGET/dash_tests/core" ]; then
        echo "$TARGET"
        exit 0
    fi
fi
WORK="$(mktemp -d "$CACHE/.fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "downloading the pySHACL $VERSION source distribution for its SHACL test suites…" >&2
"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    "pyshacl==$VERSION" -d "$WORK/dist" >&2
SDISTS=("$WORK"/dist/pyshacl-*.tar.gz)
tar -xzf "${SDISTS[0]}" -C "$WORK" --wildcards \
    "pyshacl-$VERSION/test/resources/sht_tests/*" "pyshacl-$VERSION/test/resources/dash_tests/*"

mkdir -p "$WORK/out"
mv "$WORK/pyshacl-$VERSION/test/resources/sht_tests" "$WORK/out/sht_tests"
mv "$WORK/pyshacl-$VERSION/test/resources/dash_tests" "$WORK/out/dash_tests"
# Another run may have finished first; its copy is as good as ours.
if [ ! -f "$TARGET/sht_tests/manifest.ttl" ]; then
    rm -rf "$TARGET"
    mv "$WORK/out" "$TARGET"
fi
echo "$TARGET"
