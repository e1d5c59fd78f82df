"""Sonality from async Python: run `python samples/quickstart.py` (the store is
SONALITY_STORE, by default the SQLite file in your user data directory; without
SONALITY_MODEL the exchange is stored as pending and enriched later)."""

import asyncio
from contextlib import suppress

from sonality import Settings, Sonality
from sonality.errors import AlreadyExists


async def main() -> None:
    async with Sonality.from_settings(Settings()) as s:
        with suppress(AlreadyExists):  # a second run finds her
            await s.create_persona("ada", name="Ada", core_identity="I follow evidence.")
        recorded = await s.record(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message="I'm allergic to peanuts.",
            response="Noted!",
            episode_id="quickstart-1",  # an idempotency key: a second run stores nothing
        )
        print("episode:", recorded.status)  # "enriched", or "pending" without a model
        ctx = await s.context("ada", user_id="u1", message="Snack ideas?")
        print(ctx.as_prompt())  # put this block in your own system prompt
        await s.enrich_pending("ada")  # catch up after an outage
        print("beliefs:", len(await s.beliefs("ada")))
        print("facts:", [f.text for f in await s.facts("ada", user_id="u1")])


if __name__ == "__main__":
    asyncio.run(main())
