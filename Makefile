# graphmem developer commands. `make demo` and `make test` are all a fresh clone needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
NEO4J  := tools/neo4j/neo4j.sh

.PHONY: demo test test-local lint unit venv docs neo4j-start neo4j-stop neo4j-status bench-store bench-ingest bench-add-many bench-guard bench-updates bench-race bench-startup bench-fulltext bench-server bench-soak bench-async bench-migrate bench-peers bench-embedding bench-extraction shacl-tests notebooks-strip clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,server,fast,notebooks,langgraph,langchain,agents,docs]'
	$(BIN)/python -m pip install -q --no-deps -e examples/memory_backend  # the backend kit's example (tests/test_backend_kit.py)
	$(BIN)/graphmem models pull >/dev/null  # the default embedder's files, once (see graphmem/embedding/files.py)
	rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

demo: venv  ## add a short conversation, show the guard at work (superseded and rejected facts), search it: offline
	$(BIN)/graphmem demo

test: venv lint docs shacl-tests chromium  ## the whole suite; starts Neo4j unless NEO4J_URI already answers
	bash tools/run-tests.sh $(ARGS)

lint: venv
	$(BIN)/ruff check graphmem tests bench notebooks examples
	$(BIN)/mypy graphmem

unit: venv  ## tests without Neo4j (its tests skip unless CI=true)
	$(BIN)/pytest -q $(ARGS)

docs: venv  ## the documentation site into build/site (MkDocs, --strict: a broken link or a missing page fails)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

notebooks-strip: venv  ## remove outputs and run metadata from notebooks/*.ipynb before committing them
	$(BIN)/python notebooks/strip.py

shacl-tests:  ## W3C SHACL + DASH suites from pySHACL's sdist into .cache/shacl-tests (once)
	bash tools/fetch-shacl-tests.sh

neo4j-start:
	$(NEO4J) start && $(NEO4J) wait

neo4j-stop:
	$(NEO4J) stop

neo4j-status:
	$(NEO4J) status

bench-store: venv  ## batched vs single writes and search latency, both backends
	bash tools/with-neo4j.sh $(BIN)/python bench/store.py $(ARGS)

bench-ingest: venv  ## add(infer=True) throughput with an instant stand-in LLM, both backends
	bash tools/with-neo4j.sh $(BIN)/python bench/ingest.py $(ARGS)

bench-add-many: venv  ## add_many against one add per item (rules and verbatim), both backends
	bash tools/with-neo4j.sh $(BIN)/python bench/add_many.py $(ARGS)

bench-race: venv  ## concurrent writers released together: duplicates, open functional values, dry_run (both backends)
	bash tools/with-neo4j.sh $(BIN)/python bench/race.py $(ARGS)

# its own Neo4j (port 7689, data in .cache/neo4j-updates): the suite's server is pinned to the hashing embedder
UPDATES_NEO4J := GRAPHMEM_NEO4J_HOME=$(CURDIR)/.cache/neo4j-updates GRAPHMEM_NEO4J_PORT=7689 \
	NEO4J_URI=$${UPDATES_NEO4J_URI:-bolt://127.0.0.1:7689}
bench-updates: venv  ## current and past values of changing facts in search (bench/data/updates.jsonl), both backends
	$(UPDATES_NEO4J) bash tools/with-neo4j.sh $(BIN)/python bench/updates.py --backend both --out bench/results/updates.json $(ARGS)

bench-guard: venv  ## guard p50/p95 against naive whole-graph validation
	$(BIN)/python bench/guard.py $(ARGS)

bench-server: venv  ## REST search p50/p95 and requests/s, 8 clients for 30 s, against in-process Memory.search (both backends)
	bash tools/with-neo4j.sh $(BIN)/python bench/server.py $(ARGS)

# The soak's own Neo4j (port 7689, data in .cache/neo4j-soak): a Neo4j store is pinned to the embedder that
# first wrote it, and the soak runs the default one (the bundled server's tests use hashing). SOAK_NEO4J_URI: another server.
bench-soak: venv  ## graphmem serve under mixed load from 8 clients for 30 min: RSS, files, threads, p95 per op, errors; JSON + PNG (both backends; ARGS='--minutes 5')
	GRAPHMEM_NEO4J_HOME=$(CURDIR)/.cache/neo4j-soak GRAPHMEM_NEO4J_PORT=7689 NEO4J_URI=$${SOAK_NEO4J_URI:-bolt://127.0.0.1:7689} \
	bash tools/with-neo4j.sh $(BIN)/python bench/soak.py $(ARGS)

bench-migrate: venv  ## SQLite -> Neo4j -> SQLite migration time and memories/s at 100k memories (ARGS='--n 10000')
	bash tools/with-neo4j.sh $(BIN)/python bench/migrate.py $(ARGS)

bench-fulltext: venv  ## SQLite full-text candidates at 100k: natural and common-word queries, against the code before the bound
	$(BIN)/python bench/fulltext.py $(ARGS)

bench-async: venv  ## N concurrent add(infer=True) with a slow stand-in LLM: native AsyncMemory vs to_thread(Memory.add), both backends
	bash tools/with-neo4j.sh $(BIN)/python bench/async_add.py $(ARGS)

PEERS := .cache/bench-peers
bench-peers:  ## graphmem in its default configuration and mem0 2.2.1 (local Qdrant, offline) with and without its entity links side by side on the three files of ../shared/data, one after another (own virtualenv in .cache/bench-peers)
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q -e '.[local]' mem0ai==2.2.1
	$(PEERS)/bin/python -m bench.peers_env  # what mem0's BM25 and entity boost load offline: fastembed, an en_core_web_sm shim
	cd /tmp && $(CURDIR)/$(PEERS)/bin/python $(CURDIR)/bench/peers.py $(CURDIR)/../shared/data/locomo-dev.json.gz --threads 1 --no-add-variants --out $(CURDIR)/bench/results/peers_locomo.json $(ARGS)
	cd /tmp && $(CURDIR)/$(PEERS)/bin/python $(CURDIR)/bench/peers.py $(CURDIR)/../shared/data/longmemeval-s-dev.json.gz --limit-collections 12 --threads 1 --no-add-variants --out $(CURDIR)/bench/results/peers_longmemeval.json $(ARGS)
	cd /tmp && $(CURDIR)/$(PEERS)/bin/python $(CURDIR)/bench/peers.py $(CURDIR)/../shared/data/musique-100.json.gz --threads 1 --no-add-variants --out $(CURDIR)/bench/results/peers_musique.json $(ARGS)

bench-embedding:  ## all-MiniLM-L6-v2 per call: the default ONNX Runtime embedder against sentence-transformers encode and the packed PyTorch forward; virtualenv of bench-peers
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q -e '.[local]' mem0ai==2.2.1
	$(PEERS)/bin/python bench/embedding.py --out bench/results/embedding.json $(ARGS)

test-local:  ## tests of the [local] extra (sentence-transformers, PyTorch): packed embedding equals encode (virtualenv shared with bench-peers)
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q -e '.[local,test]' mem0ai==2.2.1
	$(PEERS)/bin/pytest -q -p no:cacheprovider tests/local $(ARGS)

# graphmem's default install alone (no extras), as a user's `pip install graphmem`: what bench-startup measures
DEFAULT_VENV  := .venv-default
DEFAULT_STAMP := $(DEFAULT_VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(DEFAULT_STAMP): pyproject.toml
	test -x $(DEFAULT_VENV)/bin/python || $(PYTHON) -m venv $(DEFAULT_VENV)
	$(DEFAULT_VENV)/bin/python -m pip install -q --upgrade pip
	$(DEFAULT_VENV)/bin/python -m pip install -q -e .
	rm -f $(DEFAULT_VENV)/.installed-* && touch $(DEFAULT_STAMP)

bench-startup: venv $(DEFAULT_STAMP)  ## import, CLI and first add+search of fresh processes (default install), against a baseline commit
	$(BIN)/python bench/startup.py --python $(DEFAULT_VENV)/bin/python $(ARGS)

# The search benchmark's own Neo4j (port 7688, data in .cache/neo4j-bench, 1 GB page cache): the
# tenants `make test` leaves in the bundled server never mix with its stores. BENCH_NEO4J_URI: another server.
BENCH_NEO4J := GRAPHMEM_NEO4J_HOME=$(CURDIR)/.cache/neo4j-bench GRAPHMEM_NEO4J_PORT=7688 \
	GRAPHMEM_NEO4J_PAGECACHE=$${GRAPHMEM_NEO4J_PAGECACHE:-1g} NEO4J_URI=$${BENCH_NEO4J_URI:-bolt://127.0.0.1:7688}

.PHONY: bench-search bench-neo4j-start bench-neo4j-stop
bench-search: venv  ## search p50/p95 per mode at 10k/100k memories, both backends (issue 5; stores cached in .cache/)
	$(BENCH_NEO4J) bash tools/with-neo4j.sh $(BIN)/python bench/search_latency.py $(ARGS)

bench-neo4j-start:  ## keep the search benchmark's Neo4j warm between bench-search runs
	$(BENCH_NEO4J) $(NEO4J) start && $(BENCH_NEO4J) $(NEO4J) wait

bench-neo4j-stop:
	$(BENCH_NEO4J) $(NEO4J) stop

# -- the graph view (graphmem view) ------------------------------------------------------------------
.PHONY: chromium vendor-js
CYTOSCAPE ?= 3.34.4

chromium:  ## Debian's chromium for the graph view's browser test: installed when missing and running as root
	@command -v chromium >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

vendor-js:  ## refresh the vendored Cytoscape.js of graphmem/servers/static/vendor from npm (CYTOSCAPE=version)
	bash tools/vendor-js.sh $(CYTOSCAPE)

clean:
	rm -rf $(VENV) $(DEFAULT_VENV) tools/neo4j/target .pytest_cache .mypy_cache .ruff_cache

# -- a real local LLM (issue 18): llama-cpp-python's server with Gemma 3 270M ------------------------
.PHONY: test-llm
test-llm: venv  ## end-to-end LLM protocol tests against llama.cpp + Gemma 3 270M (first run builds ~15 min; cache .cache/llm)
	bash tools/llm/serve.sh $(BIN)/pytest -q -p no:cacheprovider -ra tests/llm $(ARGS)

bench-extraction: venv  ## extraction quality on bench/data/extraction-gold.jsonl: rule extractor on the gold set (ARGS='--extractor llm --standin' or '--base-url URL --model M')
	$(BIN)/python bench/extraction.py $${ARGS:---extractor rules}
