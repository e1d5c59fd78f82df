"""An erasure request names a user, not a persona: ``forget_everywhere`` (and ``sonality
forget --all-personas``) erases the user from every persona in one command, one persona
per transaction, and a run cut short is finished by running it again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from sonality.cli import main
from sonality.models import UserErasureStatus
from sonality.service import Sonality
from sonality.testing import FrozenClock
from tests.erasure.conftest import Turn, cli_env, play


async def _everywhere(app: Sonality, clock: FrozenClock) -> None:
    """u1 talks with ada and cid, not with bea; u2 with all three."""
    await play(app, clock, "ada", [Turn(1, "u1", "a1"), Turn(2, "u2", "a2")])
    await play(app, clock, "bea", [Turn(3, "u2", "b2")])
    await play(app, clock, "cid", [Turn(4, "u1", "c1"), Turn(5, "u2", "c2")])


async def test_a_user_is_forgotten_in_every_persona(app: Sonality, clock: FrozenClock) -> None:
    """Each persona reports what happened there; afterwards no persona holds the user,
    the others are untouched, and each erasing persona has its audit record."""
    await _everywhere(app, clock)
    done = await app.forget_everywhere(user_id="u1")
    assert [(d.persona_id, d.status) for d in done] == [
        ("ada", UserErasureStatus.ERASED),
        ("bea", UserErasureStatus.ABSENT),
        ("cid", UserErasureStatus.ERASED),
    ]
    assert [d.erasure is not None and d.erasure.episodes for d in done] == [1, False, 1]
    for persona in ("ada", "bea", "cid"):
        assert await app.episodes(persona, user_id="u1") == []
        assert await app.episodes(persona, user_id="u2") != []
    assert [e.kind.value for e in await app.erasures("cid")] == ["user"]


async def test_a_run_cut_short_is_finished_by_running_it_again(
    app: Sonality, clock: FrozenClock
) -> None:
    """The run is stopped while it waits for cid (a reflection holds cid's lease): ada is
    erased already, cid not. Run again, it erases cid and reports ada as erased before."""
    await _everywhere(app, clock)
    assert await app.store.acquire_lease("cid", "worker", now=clock.now(), ttl_seconds=600)
    run = asyncio.create_task(app.forget_everywhere(user_id="u1"))
    for _ in range(1_200):  # until ada is done (the run then waits for cid's lease)
        if await app.erasures("ada"):
            break
        await asyncio.sleep(0.05)
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)
    assert await app.episodes("cid", user_id="u1") != []
    await app.store.release_lease("cid", "worker")

    done = await app.forget_everywhere(user_id="u1")
    assert [(d.persona_id, d.status) for d in done] == [
        ("ada", UserErasureStatus.ERASED_BEFORE),
        ("bea", UserErasureStatus.ABSENT),
        ("cid", UserErasureStatus.ERASED),
    ]
    assert await app.episodes("cid", user_id="u1") == []
    again = await app.forget_everywhere(user_id="u1")
    assert {d.status for d in again} == {
        UserErasureStatus.ERASED_BEFORE,
        UserErasureStatus.ABSENT,
    }


def test_the_cli_forgets_a_user_everywhere(tmp_path: Path) -> None:
    """``sonality forget --user U --all-personas --yes --json`` reports per persona; naming
    both a persona and --all-personas (or neither) is refused with one line (exit 2)."""
    env = cli_env(tmp_path)

    def invoke(*args: str) -> tuple[int, str]:
        done = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
        return done.exit_code, done.stdout

    for persona in ("ada", "bea"):
        invoke("persona", "create", persona, "--name", "X", "--identity", "I am.")
        code, _ = invoke(
            *("record", "--persona", persona, "--user", "u1", "--conversation", "c"),
            *("--message", "hello", "--response", "hi"),
        )
        assert code == 0
    code, out = invoke("forget", "--user", "u1", "--all-personas", "--yes", "--json")
    assert code == 0
    assert [(d["persona_id"], d["status"]) for d in json.loads(out)] == [
        ("ada", "erased"),
        ("bea", "erased"),
    ]
    code, out = invoke("forget", "--user", "u1", "--all-personas", "--yes")
    assert code == 0 and "ada: erased before" in out
    assert invoke("forget", "--user", "u1", "--yes")[0] == 2
    assert invoke("forget", "--user", "u1", "--persona", "ada", "--all-personas", "--yes")[0] == 2


async def test_rest_forgets_a_user_everywhere(store: Any, t0: Any) -> None:
    """``DELETE /v1/users/{user}`` needs an admin key for every persona and answers per
    persona."""
    from tests.erasure.test_key_grants import _facade, _server

    clock = FrozenClock(t0)
    app = _facade(store, clock)
    for persona in ("ada", "bea"):
        await app.create_persona(persona, name="X", core_identity="I am.")
        await app.record(persona, user_id="u1", conversation_id="c", message="hi", response="-")
    _, admin = await app.create_key(scope="admin")
    _, bound = await app.create_key(scope="admin", persona_ids=["ada"])
    async with _server(app, 5.0) as client:
        async with client(bound) as c:
            assert (await c.delete("/v1/users/u1")).status_code == 403
        async with client(admin) as c:
            response = await c.delete("/v1/users/u1")
    assert response.status_code == 200, response.text
    assert [(d["persona_id"], d["status"]) for d in response.json()] == [
        ("ada", "erased"),
        ("bea", "erased"),
    ]


class _LateAnswers:
    """The test's store, whose ``acquire_lease`` answers ``delay`` seconds after the
    write committed: a caller cancelled in between never sees that it took the lease."""

    def __init__(self, store: Any, delay: float) -> None:
        self._store = store
        self._delay = delay

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def acquire_lease(self, *args: Any, **kwargs: Any) -> bool:
        taken: bool = await self._store.acquire_lease(*args, **kwargs)
        await asyncio.sleep(self._delay)
        return taken


async def test_a_lease_taken_as_the_caller_is_cancelled_is_given_back(
    app: Sonality, clock: FrozenClock, llm: Any
) -> None:
    """Cancelling an erasure or a reflection while its lease write is in flight leaves
    the lease free: the write's lease is released before the cancellation goes on (a
    held lease would make every later erasure of the persona fail for its time to live)."""
    from sonality.core.opinion import OpinionParams
    from sonality.mind.erasure import Eraser
    from sonality.mind.reflection import Reflector

    await play(app, clock, "ada", [Turn(1, "u1", "a1")])
    late = _LateAnswers(app.store, delay=0.5)
    eraser = Eraser(store=late, clock=clock, params=OpinionParams())
    reflector = Reflector(store=late, llm=llm, clock=clock)
    for run in (
        lambda: eraser.forget_user("ada", "u1"),
        lambda: reflector.reflect("ada", force=True),
    ):
        task = asyncio.create_task(run())
        await asyncio.sleep(0.25)  # the lease write has committed; its answer is not back
        task.cancel()
        assert isinstance(
            (await asyncio.gather(task, return_exceptions=True))[0], asyncio.CancelledError
        )
        assert await app.store.acquire_lease("ada", "other", now=clock.now(), ttl_seconds=600)
        await app.store.release_lease("ada", "other")
    assert (await app.forget_user("ada", user_id="u1")).episodes == 1
