"""``sonality serve``: the facade over HTTP — REST under ``/v1``, an OpenAI-compatible
chat endpoint, MCP over streamable HTTP — with API keys.

::

    server/
      app.py      the app factory: lifespan (opens the facade), error bodies, body-size
                  limit, request log and metrics
      deps.py     what routes depend on: config, state, the facade, the caller
      auth.py     Bearer API keys: who is calling, which personas and scope it has
      errors.py   Sonality's error kinds as HTTP statuses and ``{error, kind, detail}``
      routes/     the REST routes over the facade, one module per OpenAPI tag (health,
                  personas, memory, reads, reflection, agent, keys, forget)
      chat.py     ``/v1/chat/completions`` and ``/v1/models`` in OpenAI's shapes
      mcp_tools.py the MCP tools and resources (stdio and streamable HTTP)
      metrics.py  Prometheus text: requests, latency, model calls and tokens
      run.py      running it under uvicorn (one process or several workers)

This package is the only one that imports the web stack (FastAPI, Starlette, uvicorn) and
the MCP SDK, which come with the ``sonality[server]`` extra; the core and the CLI never
import it (``sonality serve`` loads it inside the command).
"""

from __future__ import annotations

from sonality.server.app import ServerConfig, create_app

__all__ = ["ServerConfig", "create_app"]
