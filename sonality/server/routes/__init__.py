"""The REST routes under ``/v1``, one module per OpenAPI tag, each route a thin call.

A route checks the caller (its key sees the persona and has the scope), then calls the
facade, which validates every id and size exactly as it does for library callers (400
with the facade's own message). Reads need ``read``, anything that writes needs
``write``, personas and keys need ``admin``.
"""

from fastapi import APIRouter

from sonality.server.routes import agent, forget, health, keys, memory, personas, reads, reflection

__all__ = ["router"]

router = APIRouter()
"""Every REST route, in the order of the OpenAPI document."""
router.include_router(health.router)
router.include_router(personas.router)
router.include_router(memory.router)
router.include_router(reads.router)
router.include_router(reflection.router)
router.include_router(agent.router)
router.include_router(keys.router)
router.include_router(forget.router)
