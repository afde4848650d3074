#!/usr/bin/env bash
# Run a command with a Neo4j server: the one at $NEO4J_URI if it answers, else the bundled
# launcher, started here and stopped afterwards. Exports NEO4J_URI/NEO4J_USER/NEO4J_PASSWORD.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
PY="$ROOT/.venv/bin/python"
NEO4J="$ROOT/tools/neo4j/neo4j.sh"

export NEO4J_USER="${NEO4J_USER:-neo4j}"
export NEO4J_PASSWORD="${NEO4J_PASSWORD:-graphmem-test}"

answers() {
    "$PY" - "$1" <<'PYEOF' >/dev/null 2>&1
import os, sys
from neo4j import GraphDatabase
with GraphDatabase.driver(sys.argv[1], auth=(os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]),
                          connection_timeout=5) as d:
    d.verify_connectivity()
PYEOF
}

started=""
if [[ -n "${NEO4J_URI:-}" ]] && answers "$NEO4J_URI"; then
    echo "with-neo4j: using the server at $NEO4J_URI"
else
    [[ -n "${NEO4J_URI:-}" ]] && echo "with-neo4j: nothing answers at $NEO4J_URI; starting the bundled Neo4j"
    export GRAPHMEM_NEO4J_PORT="${GRAPHMEM_NEO4J_PORT:-7687}"
    if "$NEO4J" status >/dev/null 2>&1; then
        echo "with-neo4j: the bundled Neo4j is already running; using it"
    else
        "$NEO4J" start
        started=1
    fi
    "$NEO4J" wait
    export NEO4J_URI="bolt://127.0.0.1:$GRAPHMEM_NEO4J_PORT"
fi
stop() { [[ -n "$started" ]] && "$NEO4J" stop || true; }
trap stop EXIT
"$@"
