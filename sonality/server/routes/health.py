"""Health, readiness and metrics: ``/healthz``, ``/readyz``, ``/metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from sonality.models import (
    KeyScope,
)
from sonality.server.deps import CallerDep, SonalityDep
from sonality.server.lag import readiness
from sonality.server.metrics import CONTENT_TYPE
from sonality.server.routes.keys import _require_global_admin

router = APIRouter()


@router.get("/healthz", tags=["health"])
async def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get("/readyz", tags=["health"])
async def readyz(app: SonalityDep, request: Request, response: Response) -> dict[str, Any]:
    """Readiness: the store answers and its schema is current (503 otherwise). Ready,
    it also reports the lag of the background work: ``degraded`` (still 200) once a
    persona's oldest pending episode or unthought turn is older than
    ``SONALITY_LAG_DEGRADED_SECONDS`` (see ``server/lag.py``)."""
    from sonality.errors import SonalityError

    checks: dict[str, str] = {}
    lag: dict[str, Any] | None = None
    try:
        await app.store.ping()
        checks["store"] = "ok"
        status = await app.store.schema_status()
        checks["schema"] = "ok" if not status.pending else f"{len(status.pending)} pending"
        if not status.pending:
            bound = request.app.state.sonality_server.config.lag_degraded_seconds
            keeping_up, lag = readiness(await app.lag(), bound)
            checks["lag"] = "ok" if keeping_up else "behind"
    except SonalityError as exc:  # the step that failed says why
        step = next(s for s in ("store", "schema", "lag") if s not in checks)
        checks[step] = type(exc).__name__
    if lag is None:
        response.status_code = 503
        return {"status": "not ready", "checks": checks}
    state = "ready" if checks["lag"] == "ok" else "degraded"
    return {"status": state, "checks": checks, "lag": lag}


@router.get("/metrics", tags=["health"], response_class=Response)
async def metrics(request: Request, caller: CallerDep) -> Response:
    """Prometheus text; needs a ``metrics`` key (which may read this and nothing else) or
    an admin key for every persona (it names them all)."""
    if caller.key is None or caller.key.scope is not KeyScope.METRICS:
        _require_global_admin(caller)
    text = await request.app.state.sonality_server.metrics.render()
    return Response(text, media_type=CONTENT_TYPE)
