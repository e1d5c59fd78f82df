# The Sonality worker, HTTP server and CLI. Build: docker build -t sonality .
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True \
    SONALITY_LOG_FORMAT=json
WORKDIR /app
COPY pyproject.toml README.md ./
COPY sonality ./sonality
COPY cypher ./cypher
COPY prompts ./prompts
COPY migrations ./migrations
COPY samples ./samples
RUN pip install --no-cache-dir '.[server]' && useradd --create-home sonality
USER sonality
ENTRYPOINT ["sonality"]
CMD ["worker"]
