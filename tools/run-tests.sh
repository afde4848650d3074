#!/usr/bin/env bash
# The test suite, with Neo4j (see with-neo4j.sh). Extra arguments go to pytest.
# Every Neo4j test runs through a routing URI (neo4j://, what clusters and Aura need; the bundled
# server answers with a routing table of itself), then, in a whole run, the store contracts again
# through bolt:// (one server, no routing).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
if [[ -z "${GRAPHMEM_TESTS_WITH_NEO4J:-}" ]]; then
    GRAPHMEM_TESTS_WITH_NEO4J=1 exec bash tools/with-neo4j.sh bash "${BASH_SOURCE[0]}" "$@"
fi
bolt="$NEO4J_URI"
if [[ "$bolt" == bolt://* ]]; then
    NEO4J_URI="neo4j://${bolt#bolt://}" .venv/bin/pytest -q -ra --durations=30 "$@"
    if [[ $# -eq 0 ]]; then
        echo "run-tests: the store contracts again through $bolt"
        NEO4J_URI="$bolt" .venv/bin/pytest -q -ra -m neo4j tests/test_store_contract.py tests/test_graph_store_contract.py
    fi
else
    .venv/bin/pytest -q -ra "$@"
fi
