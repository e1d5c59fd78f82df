"""Sonality without async: `SonalitySync` runs the facade on a loop of its own and makes
every method a blocking call. Run `python samples/quickstart_sync.py`."""

from contextlib import suppress

from sonality import Settings, SonalitySync
from sonality.errors import AlreadyExists

with SonalitySync(Settings()) as s:
    with suppress(AlreadyExists):  # a second run finds her
        s.create_persona("ada", name="Ada", core_identity="I follow evidence.")
    s.record(
        "ada",
        user_id="u1",
        conversation_id="c1",
        message="I'm allergic to peanuts.",
        response="Noted!",
        episode_id="quickstart-1",
    )
    print(s.context("ada", user_id="u1", message="Snack ideas?").as_prompt())
    print("episodes:", len(s.episodes("ada", user_id="u1")))
