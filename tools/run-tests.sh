#!/usr/bin/env bash
# The test suite, with Neo4j (see with-neo4j.sh). Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
exec bash tools/with-neo4j.sh .venv/bin/pytest -q -ra "$@"
