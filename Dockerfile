# The graphmem REST server (`graphmem serve`, see the README's "REST server").
#
#   docker build -t graphmem .
#   docker run -p 127.0.0.1:8000:8000 -v graphmem-data:/data \
#     -e GRAPHMEM_SERVER__KEYS='[{"id": "app", "api_key": "…at least 16 characters…", "user_id": "u1"}]' graphmem
#
# With Neo4j: `docker compose --profile server up -d` (docker-compose.yml). The embedded SQLite store
# lives in /data; keys come from GRAPHMEM_SERVER__KEYS or a mounted keys file (GRAPHMEM_SERVER__KEYS_FILE).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY graphmem ./graphmem
COPY ontology ./ontology
COPY shapes ./shapes
# A wheel build (not editable): it carries the default ontology and shapes as graphmem/data.
RUN pip install '.[server,fast]' && rm -rf /src

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin graphmem \
    && mkdir -p /data && chown graphmem:graphmem /data
USER graphmem
WORKDIR /home/graphmem

ENV GRAPHMEM_HOME=/data \
    GRAPHMEM_SERVER__HOST=0.0.0.0 \
    GRAPHMEM_SERVER__PORT=8000
VOLUME ["/data"]
EXPOSE 8000

# Ready when the store answers a read (GET /readyz); compose services can wait on it.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=5 \
    CMD ["python", "-c", "import os, sys, urllib.request; port = os.environ.get('GRAPHMEM_SERVER__PORT', '8000'); sys.exit(0 if urllib.request.urlopen(f'http://127.0.0.1:{port}/readyz', timeout=4).status == 200 else 1)"]

ENTRYPOINT ["graphmem", "serve"]
