"""The library never writes to stdout, and its INFO events never carry user text."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import structlog

from sonality.llm.embedders import HashEmbedder
from sonality.observability import configure_logging
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.pipeline import scripts

LIBRARY_USE = """
import asyncio, sys
from sonality.service import Sonality
from sonality.storage.sqlite.store import SqliteStore
from sonality.testing import ScriptedLLM
from tests.pipeline import scripts

async def main():
    store = await SqliteStore.open(sys.argv[1], embedding_dimensions=256)
    await store.migrate()
    llm = ScriptedLLM()
    llm.default("assess_evidence", scripts.evidence_reply)
    llm.default("extract_insight", scripts.insight_reply)
    async with Sonality(store=store, llm=llm, owns_store=True) as app:
        await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
        for i in (1, 2, 3):
            t = scripts.turn(i)
            await app.record("ada", user_id="u1", conversation_id="c1",
                             message=t.message, response=t.response)
        await app.context("ada", user_id="u1", message="and now?")
        await app.forget_user("ada", user_id="u1")
        try:
            await app.persona("nobody")
        except Exception:
            pass

asyncio.run(main())
"""


def test_the_library_writes_nothing_to_stdout(tmp_path: Path) -> None:
    """Used as a library (no logging configured, stderr discarded), recording, enriching,
    reading and forgetting leave stdout empty."""
    out = subprocess.run(
        [sys.executable, "-c", LIBRARY_USE, str(tmp_path / "lib.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[1],
        check=True,
    )
    assert out.stdout == b""


async def test_info_events_carry_no_user_text(sqlite_store: Any, t0: Any) -> None:
    """With INFO logging on, the events of record, enrichment, context and forget_user
    name ids and counts, never a message, a response or an extracted fact."""
    stream = io.StringIO()
    configure_logging("json", "INFO", stream)
    try:
        llm = ScriptedLLM()
        llm.default("assess_evidence", scripts.evidence_reply)
        llm.default("extract_insight", scripts.insight_reply)
        app = Sonality(
            store=sqlite_store,
            llm=llm,
            embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
            clock=FrozenClock(t0),
        )
        await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
        texts = []
        for i in (1, 2, 3, 9):
            t = scripts.turn(i)
            texts += [t.message, t.response, *(f["text"] for f in t.facts)]
            await app.record(
                "ada", user_id="u1", conversation_id="c1", message=t.message, response=t.response
            )
        await app.context("ada", user_id="u1", message="What about nuclear power?")
        await app.forget_user("ada", user_id="u1")
    finally:
        structlog.reset_defaults()
    logged = stream.getvalue()
    assert "episode_recorded" in logged and "user_erased" in logged  # INFO events did log
    for text in [*texts, "What about nuclear power?"]:
        assert text not in logged
    assert "peanuts" not in logged and "short answers" not in logged
