"""The OpenAPI document of the HTTP API, as checked in at ``docs/openapi.json``.

    python -m sonality.server.openapi > docs/openapi.json     (``make openapi``)

The app is built without opening anything (the facade opens only at startup), so this
needs no store and no model.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from sonality import Sonality
from sonality.server.app import create_app

__all__ = ["document", "text"]


async def _never() -> Sonality:
    raise RuntimeError("the OpenAPI document is built without starting the server")


def document() -> dict[str, Any]:
    """The OpenAPI document of the app."""
    schema: dict[str, Any] = create_app(_never).openapi()
    return schema


def text() -> str:
    """The document as checked in: indented, keys in order, a final newline."""
    return json.dumps(document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(text())
