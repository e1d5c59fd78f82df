"""A reflection that stalls after the model answered and before its commit, for the
SIGKILL test: ``python -m tests.reflection.stall_before_commit PERSONA MARKER``.

The store comes from the ``SONALITY_*`` environment like any entry point; the model is
the scripted one. The script wraps this process's ``commit_reflection`` so it writes
MARKER and sleeps instead of committing: the test kills the process at that moment.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from sonality.config import Settings
from sonality.service import Sonality
from tests.reflection.fake_models import scripted_llm


async def main(persona_id: str, marker: Path) -> None:
    app = await Sonality.open(Settings(), llm=scripted_llm(), owner="doomed-worker")

    async def stall(commit: Any) -> None:
        await asyncio.to_thread(marker.write_text, commit.reflection.id, encoding="utf-8")
        await asyncio.sleep(3600)

    app.store.commit_reflection = stall  # type: ignore[method-assign]
    await app.reflect(persona_id, force=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
