"""Issue 29.4: every path is bounded in time when the model hangs. ``respond`` (and the
OpenAI-compatible chat over it) gives up at ``respond_deadline_seconds``: the user's
message is stored pending and ``AnswerTimeout`` (HTTP 504 with ``Retry-After``) names it;
the same call with that id, once the model answers, answers it — one exchange, with its
answer. The CLI's ``record`` stops enriching at the record deadline, its episode pending.

The model is the OpenAI-compatible fake over real HTTP (``FakeOpenAI.hang``) behind the
real litellm adapter; over HTTP, a server whose scripted Talker hangs while a file exists.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.errors import AnswerTimeout
from sonality.llm.embedders import HashEmbedder
from sonality.llm.litellm_llm import LiteLLM
from sonality.mind.parts import Limits
from sonality.mind.runtime import WRITE_GRACE
from sonality.models import EnrichmentStatus, RuntimeMode, ThinkerStatus
from sonality.service import Sonality
from sonality.testing.openai_server import FakeOpenAI
from tests.conftest import EMBEDDING_DIMENSIONS

DEADLINE = 1.5
BOUND = DEADLINE + WRITE_GRACE + 1.0
"""The longest a respond may take: its deadline, the grace it gives the write that keeps
the exchange (past it the write goes on in the background), and a second of slack."""
SLOW_WRITE = 3.0
"""How long a slow store takes over the write that keeps an exchange (a loaded machine
took 15-18 s on Neo4j): with the deadline, longer than the bound."""


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def hung_app(store: Any, model: FakeOpenAI, deadline: float = DEADLINE) -> Sonality:
    """A facade whose model is the fake behind the real adapter, with a long timeout (so
    only the deadline can cut a hung call short)."""
    llm = LiteLLM("openai/fake", api_base=model.url, api_key="unused", timeout=60, max_retries=3)
    return Sonality(
        store=store,
        llm=llm,
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        limits=Limits(respond_deadline_seconds=deadline, record_deadline_seconds=deadline),
    )


async def test_respond_past_its_deadline_stores_the_message_and_answers_on_retry(
    store: Any, model: FakeOpenAI
) -> None:
    """With the model hung, respond fails with AnswerTimeout within the deadline (+ a write),
    naming the stored message (pending, no response yet) and when to retry; once the model
    answers, respond with that episode id answers it: one episode, its response filled in,
    the turn registered for the Thinker."""
    app = hung_app(store, model)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.set_runtime("ada", mode=RuntimeMode.BASELINE)
    # the store's statements compiled, as on a warm server (the bound is the deadline plus
    # the write that keeps the message)
    await app.record(
        "ada", user_id="u0", conversation_id="c0", message="Hi", response="Hi", enrich=False
    )
    model.hang()
    started = time.monotonic()
    with pytest.raises(AnswerTimeout) as caught:
        await asyncio.wait_for(
            app.respond("ada", user_id="u1", conversation_id="c1", message="Any tea tips?"), 30
        )
    assert time.monotonic() - started < BOUND
    error = caught.value
    await app.drain("ada")  # a write the grace did not cover finishes in the background
    assert error.exit_code == 8 and error.context["retry_after_seconds"] > 0
    stored = await store.get_episode("ada", error.context["episode_id"])
    assert (stored.user_message, stored.agent_response) == ("Any tea tips?", "")
    assert stored.enrichment_status is EnrichmentStatus.PENDING
    # the client retries too early: still late, still the same stored message
    with pytest.raises(AnswerTimeout) as again:
        await app.respond(
            "ada",
            user_id="u1",
            conversation_id="c1",
            message="Any tea tips?",
            episode_id=stored.id,
        )
    assert again.value.context["episode_id"] == stored.id
    model.release()
    await app.close()
    # the client's retry, on a process whose deadline a loaded test machine cannot miss
    app = hung_app(store, model, deadline=120)
    reply = await app.respond(
        "ada", user_id="u1", conversation_id="c1", message="Any tea tips?", episode_id=stored.id
    )
    assert reply.text and reply.episode_id == stored.id and reply.turn == stored.turn
    episodes = await store.list_episodes("ada", conversation_id="c1")
    assert [(e.id, e.agent_response) for e in episodes] == [(stored.id, reply.text)]
    turn = await store.get_thinker_turn("ada", stored.id)
    assert turn.status is ThinkerStatus.DONE  # baseline: nothing to think about
    # asked once more, the stored reply comes back without a model call (the background
    # enrichment of the exchange is let finish first: its calls are not the Talker's)
    await app.drain("ada")
    calls = len(model.chat_requests())
    replay = await app.respond(
        "ada", user_id="u1", conversation_id="c1", message="Any tea tips?", episode_id=stored.id
    )
    assert replay.text == reply.text and len(model.chat_requests()) == calls
    await app.close()


def slow_appends(
    store: Any, monkeypatch: pytest.MonkeyPatch, seconds: float = SLOW_WRITE
) -> list[str]:
    """The store's appends of an exchange (the late message's, the answered exchange's)
    take ``seconds`` more before they write: a store slowed down by load. Returns the ids
    appended, in order, once written."""
    written: list[str] = []
    for name in ("append_episode", "append_turn"):
        real = getattr(store, name)

        async def slow(draft: Any, *args: Any, _real: Any = real) -> Any:
            await asyncio.sleep(seconds)
            stored = await _real(draft, *args)
            written.append(draft.id)
            return stored

        monkeypatch.setattr(store, name, slow)
    return written


async def test_a_slow_write_after_the_deadline_does_not_hold_the_call(
    store: Any, model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model hangs past the deadline and the store takes 3 s to keep the late message:
    respond still fails within the deadline plus the write's grace (+1 s), naming the id
    the write goes on storing (``stored: unconfirmed``; it waited for the whole write,
    15-18 s past a 30 s deadline under load); the write lands in the background, and the
    client's retry with the id answers it: one exchange."""
    app = hung_app(store, model)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.set_runtime("ada", mode=RuntimeMode.BASELINE)
    written = slow_appends(store, monkeypatch)
    model.hang()
    started = time.monotonic()
    with pytest.raises(AnswerTimeout) as caught:
        await asyncio.wait_for(
            app.respond("ada", user_id="u1", conversation_id="c1", message="Still there?"), 60
        )
    waited = time.monotonic() - started
    error = caught.value
    assert waited < BOUND, waited
    assert error.context["stored"] == "unconfirmed" and error.context["retry_after_seconds"] > 0
    episode_id = error.context["episode_id"]
    assert await app.drain("ada", max_seconds=60)  # the write finishes in the background
    assert written == [episode_id]
    stored = await store.get_episode("ada", episode_id)
    assert (stored.user_message, stored.agent_response) == ("Still there?", "")
    model.release()
    monkeypatch.undo()
    await app.close()
    app = hung_app(store, model, deadline=120)
    reply = await app.respond(
        "ada", user_id="u1", conversation_id="c1", message="Still there?", episode_id=episode_id
    )
    episodes = await store.list_episodes("ada", conversation_id="c1")
    assert [(e.id, e.agent_response) for e in episodes] == [(episode_id, reply.text)]
    await app.close()


async def test_a_slow_write_of_an_answered_exchange_does_not_hold_the_call(
    store: Any, model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model answers at once but the store takes 6 s more to keep the exchange (a
    4 s deadline here, so that the Talker answers in time on a loaded machine): respond
    answers AnswerTimeout within the deadline plus the grace (+1 s), naming the episode
    id (``stored: unconfirmed``); the write lands in the background (``drain`` waits for
    it), and the retry with that id returns the stored answer without asking the model."""
    deadline = 4.0
    patient = hung_app(store, model, deadline=120)  # the store's statements compiled first
    await patient.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await patient.set_runtime("ada", mode=RuntimeMode.BASELINE)
    await patient.respond("ada", user_id="u0", conversation_id="c0", message="Hi")
    assert await patient.drain("ada", max_seconds=60)
    await patient.close()
    app = hung_app(store, model, deadline=deadline)
    written = slow_appends(store, monkeypatch, seconds=6.0)
    calls = len(model.chat_requests())
    started = time.monotonic()
    with pytest.raises(AnswerTimeout) as caught:
        await asyncio.wait_for(
            app.respond("ada", user_id="u1", conversation_id="c1", message="Tea?"), 60
        )
    assert time.monotonic() - started < deadline + WRITE_GRACE + 1.0
    episode_id = caught.value.context["episode_id"]
    assert caught.value.context["stored"] == "unconfirmed"
    # the Talker answered in time, unless the reads before it took the whole deadline on
    # a loaded machine: then the late message's write is the slow one (bounded the same)
    answered = len(model.chat_requests()) > calls
    assert await app.drain("ada", max_seconds=60)  # the write finishes in the background
    assert written == [episode_id]
    await app.close()
    monkeypatch.undo()
    calls = len(model.chat_requests())
    app = hung_app(store, model, deadline=120)
    replay = await app.respond(
        "ada", user_id="u1", conversation_id="c1", message="Tea?", episode_id=episode_id
    )
    assert replay.text and not replay.created and replay.episode_id == episode_id
    if answered:  # the stored answer, without a new model call
        assert len(model.chat_requests()) == calls
    episodes = await store.list_episodes("ada", conversation_id="c1")
    assert [(e.id, e.agent_response) for e in episodes] == [(episode_id, replay.text)]
    await app.close()


async def test_an_inline_record_counts_its_deadline_from_the_call(
    store: Any, model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the store slow to append (1.5 s) and the model hung, an inline record returns
    its episode pending within the record deadline counted from the call (+1 s), without
    a read after it. It counted from after the append, then read the episode back (REST
    record at 11.1 s against a 10 s deadline, three hung calls at once on SQLite)."""
    patient = hung_app(store, model, deadline=120)  # the store's statements compiled first
    await patient.create_persona("ada", name="Ada", core_identity="I am Ada.")
    for enrich in ("off", "inline"):
        await patient.record(
            "ada", user_id="u0", conversation_id="c0", message="Hi", response="Hi", enrich=enrich
        )
    assert await patient.drain("ada", max_seconds=60)
    await patient.close()
    app = hung_app(store, model)
    for name in ("append_episode", "append_episode_with_backlog"):
        real = getattr(store, name)

        async def slow(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            print("SLOW", _real)
            await asyncio.sleep(1.5)
            return await _real(*args, **kwargs)

        monkeypatch.setattr(store, name, slow)
    model.hang()
    try:
        started = time.monotonic()
        recorded = await asyncio.wait_for(
            app.record(
                "ada",
                user_id="u1",
                conversation_id="c1",
                message="Tea?",
                response="Sure.",
                enrich="inline",
            ),
            60,
        )
        waited = time.monotonic() - started
    finally:
        model.release()
    print("WAITED", waited, recorded.status)
    assert recorded.created and recorded.status == "pending", recorded
    assert waited < DEADLINE + 1.0, waited
    await app.close()


def test_cli_record_stops_enriching_at_the_record_deadline(
    store: Any, model: FakeOpenAI, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``sonality record`` with a hung model exits 0 within the record deadline (plus what
    the same command takes with the model answering, measured first, + 1 s), the exchange
    stored and pending (it waited 4 x 60 s before)."""
    if store.backend == "sqlite":
        url = f"sqlite:///{store.path}"
    else:
        url = request.getfixturevalue("neo4j_uri")
    env = {
        "SONALITY_STORE": url,
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_MODEL": "openai/fake",
        "SONALITY_LLM_API_BASE": model.url,
        "SONALITY_LLM_API_KEY": "unused",
        "SONALITY_RECORD_DEADLINE_SECONDS": str(DEADLINE),
    }
    runner = CliRunner()
    made = runner.invoke(
        main, ["persona", "create", "ada", "--name", "Ada", "--identity", "I am."], env=env
    )
    assert made.exit_code == 0, made.output
    command = ["record", "--persona", "ada", "--user", "u1", "--response", "Hello", "--message"]
    started = time.monotonic()
    patient = env | {"SONALITY_RECORD_DEADLINE_SECONDS": "600"}
    floor = runner.invoke(main, [*command, "Hello"], env=patient)
    assert floor.exit_code == 0 and "enrichment enriched" in floor.output, floor.output
    floor_seconds = time.monotonic() - started
    model.hang()
    started = time.monotonic()
    result = runner.invoke(main, [*command, "Hi"], env=env)
    assert time.monotonic() - started < floor_seconds + DEADLINE + 1
    model.release()
    assert result.exit_code == 0, result.output
    assert "enrichment pending" in result.output


@pytest.mark.slow
def test_chat_past_its_deadline_is_504_with_retry_after(served: Any, tmp_path: Path) -> None:
    """Over HTTP, a chat completion whose Talker hangs answers 504 with Retry-After and
    the stored message's id within the deadline (+1 s); the client's retry, once the model
    answers, gets the answer, and the conversation holds the exchange once."""
    from tests.server.conftest import PLAIN_HTTP, start

    with served.client() as c:
        r = c.post(
            "/v1/personas",
            json={"id": "slowpoke", "name": "Slow", "core_identity": "Slow answers."},
        )
        assert r.status_code == 201, r.text
    gate = tmp_path / "model-hangs"
    env = served.env | {
        "SONALITY_TEST_HANG_WHILE": str(gate),
        "SONALITY_RESPOND_DEADLINE_SECONDS": str(DEADLINE),
    }
    server = start(env, served.log.with_name(f"deadline-{served.backend}.log"))
    body = {
        "model": "sonality/slowpoke",
        "user": "u1",
        "messages": [{"role": "user", "content": "Hi?"}],
    }
    # the client names its request, so that its resend is the same exchange (a first
    # message without a retry signal opens a new chat: see server/chat.py)
    headers = {"Authorization": f"Bearer {served.admin}", "Idempotency-Key": "hi-1"}
    try:
        gate.touch()
        started = time.monotonic()
        late = httpx.post(
            f"{server.url}/v1/chat/completions",
            json=body,
            headers=headers,
            timeout=60,
            verify=PLAIN_HTTP,
        )
        waited = time.monotonic() - started
        gate.unlink()
    finally:
        gate.unlink(missing_ok=True)
        server.stop()
    # the client's retry, through the session's server on the same store (its deadline is
    # the default: a loaded test machine cannot make the answer late there)
    with served.client() as c:
        retried = c.post("/v1/chat/completions", json=body, headers={"Idempotency-Key": "hi-1"})
    assert late.status_code == 504, late.text
    assert waited < BOUND
    assert int(late.headers["Retry-After"]) > 0
    assert late.json()["error"]["code"] == "timeout"
    episode_id = late.json()["error"]["episode_id"]
    assert retried.status_code == 200, retried.text
    assert retried.json()["choices"][0]["message"]["content"] == "You said: Hi?"
    assert retried.json()["id"] == f"chatcmpl-{episode_id}"
    with served.client() as c:
        episodes = c.get("/v1/personas/slowpoke/episodes").json()
    assert [(e["id"], e["agent_response"]) for e in episodes] == [(episode_id, "You said: Hi?")]


async def test_chat_counts_its_deadline_from_the_request(
    store: Any, model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/v1/chat/completions`` reads the store before it calls respond (the conversation
    a request without ``X-Sonality-Conversation`` belongs to); with that read slow (2 s, a
    loaded Neo4j compiling it) and the model hung, the chat still answers 504 within the
    deadline counted from the request, plus the grace (+1 s). It counted from respond's
    start: the read's time came on top (33.9 s against a 30 s deadline, at a load of 20)."""
    from sonality.server.app import create_app
    from sonality.server.deps import ServerConfig

    app = hung_app(store, model)
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    await app.set_runtime("ada", mode=RuntimeMode.BASELINE)
    await app.record(  # the store's statements compiled, as on a warm server
        "ada", user_id="u0", conversation_id="c0", message="Hi", response="Hi", enrich=False
    )
    listed = store.list_episodes

    async def slow_list(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(2.0)
        return await listed(*args, **kwargs)

    monkeypatch.setattr(store, "list_episodes", slow_list)

    async def opened() -> Sonality:
        return app

    asgi = create_app(opened, ServerConfig(auth=False))
    body = {"model": "sonality/ada", "user": "u1", "messages": [{"role": "user", "content": "Hm?"}]}
    model.hang()
    try:
        async with (
            asgi.router.lifespan_context(asgi),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=asgi), base_url="http://server", timeout=60
            ) as client,
        ):
            started = time.monotonic()
            late = await client.post("/v1/chat/completions", json=body)
            waited = time.monotonic() - started
    finally:
        model.release()
    assert late.status_code == 504, late.text
    assert waited < BOUND, waited
    assert int(late.headers["Retry-After"]) > 0
    episode_id = late.json()["error"]["episode_id"]
    monkeypatch.undo()
    await app.drain("ada", max_seconds=60)
    stored = await store.get_episode("ada", episode_id)
    assert (stored.user_message, stored.agent_response) == ("Hm?", "")


@pytest.mark.slow
def test_a_shutdown_cuts_a_hung_chat_with_503_and_keeps_its_message(
    served: Any, tmp_path: Path
) -> None:
    """SIGTERM while a chat waits on a hung Talker: the server lets it run for
    ``SONALITY_SHUTDOWN_SECONDS``, then cuts it with 503 and ``Retry-After``, naming the
    episode id its message is kept under (pending, no response yet), and exits within
    twice that bound (requests, then background work) plus a second. It answered 500 (the
    cancelled request) and left the message unstored."""
    from tests.server.conftest import PLAIN_HTTP, start

    shutdown = 2.0
    with served.client() as c:
        r = c.post(
            "/v1/personas",
            json={"id": "cutoff", "name": "Cut", "core_identity": "Cut short."},
        )
        assert r.status_code == 201, r.text
    gate = tmp_path / "model-hangs"
    env = served.env | {
        "SONALITY_TEST_HANG_WHILE": str(gate),
        "SONALITY_SHUTDOWN_SECONDS": str(shutdown),
    }
    server = start(env, served.log.with_name(f"shutdown-{served.backend}.log"))
    body = {
        "model": "sonality/cutoff",
        "user": "u1",
        "messages": [{"role": "user", "content": "Hello?"}],
    }
    headers = {"Authorization": f"Bearer {served.admin}", "Idempotency-Key": "cut-1"}
    answer: list[httpx.Response] = []

    def chat() -> None:
        answer.append(
            httpx.post(
                f"{server.url}/v1/chat/completions",
                json=body,
                headers=headers,
                timeout=60,
                verify=PLAIN_HTTP,
            )
        )

    try:
        gate.touch()
        in_flight = threading.Thread(target=chat)
        in_flight.start()
        time.sleep(1.0)
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(60)
        closing = time.monotonic() - started
        in_flight.join(60)
    finally:
        gate.unlink(missing_ok=True)
        server.stop()
    assert closing < 2 * shutdown + 1, closing
    [cut] = answer
    assert cut.status_code == 503, cut.text
    assert int(cut.headers["Retry-After"]) > 0
    assert cut.json()["error"]["code"] == "shutdown"
    episode_id = cut.json()["error"]["episode_id"]
    with served.client() as c:
        episodes = c.get("/v1/personas/cutoff/episodes").json()
    assert [(e["id"], e["agent_response"], e["enrichment_status"]) for e in episodes] == [
        (episode_id, "", "pending")
    ]
