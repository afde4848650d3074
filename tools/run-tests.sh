#!/usr/bin/env bash
# The test suite, with Neo4j (see with-neo4j.sh). Extra arguments go to pytest.
# Every Neo4j test runs through a routing URI (neo4j://, what clusters and Aura need; the bundled
# server answers with a routing table of itself), then, in a whole run, the store contracts again
# through bolt:// (one server, no routing).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
# The bundled server keeps its plans for the run: the tests fill it from empty, and Neo4j would
# otherwise re-plan the search statements (seconds of CPU each) again and again as it grows.
export GRAPHMEM_NEO4J_MIN_REPLAN="${GRAPHMEM_NEO4J_MIN_REPLAN:-3600}"
if [[ -z "${GRAPHMEM_TESTS_WITH_NEO4J:-}" ]]; then
    GRAPHMEM_TESTS_WITH_NEO4J=1 exec bash tools/with-neo4j.sh bash "${BASH_SOURCE[0]}" "$@"
fi
bolt="$NEO4J_URI"
if [[ "$bolt" != bolt://* ]]; then
    exec .venv/bin/pytest -q -ra "$@"
fi
export NEO4J_URI="neo4j://${bolt#bolt://}"
if [[ $# -gt 0 ]]; then
    exec .venv/bin/pytest -q -ra --durations=30 "$@"
fi
# A whole run: the Neo4j tests and the rest at once, in two processes (the Neo4j ones wait on the
# server much of the time; they share it, the others share nothing with them), the second's report
# printed after the first's. Then the store contracts through bolt://.
others="$(mktemp)"
trap 'rm -f "$others"' EXIT
.venv/bin/pytest -q -ra --durations=15 -m "not neo4j" >"$others" 2>&1 &
pid=$!
neo4j_rc=0
.venv/bin/pytest -q -ra --durations=15 -m neo4j || neo4j_rc=$?
others_rc=0
wait "$pid" || others_rc=$?
echo "run-tests: the tests without Neo4j (run beside the ones above):"
cat "$others"
if [[ $neo4j_rc -ne 0 || $others_rc -ne 0 ]]; then
    echo "run-tests: failed (Neo4j tests rc $neo4j_rc, the others rc $others_rc)"
    exit 1
fi
echo "run-tests: the store contracts again through $bolt"
NEO4J_URI="$bolt" .venv/bin/pytest -q -ra -m neo4j tests/test_store_contract.py tests/test_graph_store_contract.py
