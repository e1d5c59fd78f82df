# syntax=docker/dockerfile:1
# The Sonality worker, HTTP server and CLI. Build: docker build -t sonality .   (docker-compose.yml builds it
# once as sonality-app:local for both the migrate and worker services.)
#
# Layers: the third-party dependencies are resolved from pyproject.toml alone, so editing the
# source rebuilds only the small layer holding Sonality itself. The build context is limited by
# .dockerignore to exactly what is copied here (tests/test_container.py keeps the two in step
# with pyproject.toml).

FROM python:3.11-slim AS deps
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /build
COPY pyproject.toml ./
# Wheels of every runtime dependency, of the server extra (`sonality serve`) and of the rust
# extra (the Neo4j driver's packstream in Rust: it cuts the client's CPU per statement),
# listed by pyproject.toml (no Sonality source needed yet).
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['server'] + p['optional-dependencies']['rust']))" \
        > requirements.txt \
    && pip wheel --no-cache-dir --wheel-dir /wheels -r requirements.txt

FROM deps AS app
COPY README.md ./
COPY sonality ./sonality
COPY cypher ./cypher
COPY prompts ./prompts
COPY migrations ./migrations
COPY samples ./samples
COPY browser ./browser
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /app-wheel .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True SONALITY_LOG_FORMAT=json
# Dependencies first: this layer stays cached until pyproject.toml's dependencies change.
RUN --mount=type=bind,from=deps,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index /wheels/*.whl
RUN --mount=type=bind,from=app,source=/app-wheel,target=/app-wheel \
    pip install --no-cache-dir --no-index --no-deps /app-wheel/*.whl
# The worker's health check (docker-compose.yml): is its heartbeat file recent?
COPY tools/worker_healthcheck.py /usr/local/bin/sonality-worker-healthcheck
RUN chmod 0755 /usr/local/bin/sonality-worker-healthcheck && useradd --create-home sonality
USER sonality
WORKDIR /home/sonality
ENTRYPOINT ["sonality"]
CMD ["worker"]
