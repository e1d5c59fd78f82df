"""The OpenAI-compatible endpoints against a real server on each store, driven with the
official ``openai`` SDK: chat completions (plain and streamed, with usage), the persona
as the model, the user from the ``user`` field or a header, a conversation from a
header or derived from the history, and retries that do not record a turn twice."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest

from tests.server.conftest import Served


@pytest.fixture(scope="module")
def client(served: Served) -> openai.OpenAI:
    """An OpenAI client pointed at the server with a write key for persona ``cleo`` (made
    here) alone: the server is shared with the other modules' personas."""
    with served.client() as c:
        r = c.post("/v1/personas", json={"id": "cleo", "name": "Cleo", "core_identity": "Cleo."})
        assert r.status_code == 201, r.text
        key = c.post("/v1/keys", json={"scope": "write", "persona_ids": ["cleo"]}).json()
        listed = c.get("/v1/models").json()
    assert "sonality/cleo" in [m["id"] for m in listed["data"]]  # an admin sees it too
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=key["token"], max_retries=0)


def test_models_list_the_personas(client: openai.OpenAI) -> None:
    """/v1/models lists each persona the key sees as ``sonality/<id>``."""
    assert [m.id for m in client.models.list()] == ["sonality/cleo"]


def test_chat_completion_answers_as_the_persona(client: openai.OpenAI, served: Served) -> None:
    """A completion is the Talker's reply to the last user message, with usage; the
    exchange is recorded under the derived conversation of that user."""
    messages: list[dict[str, str]] = [{"role": "user", "content": "Hello Cleo"}]
    done = client.chat.completions.create(model="sonality/cleo", messages=messages, user="sam")  # type: ignore[arg-type]
    assert done.choices[0].message.content == "You said: Hello Cleo"
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None and done.usage.completion_tokens > 0
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
    messages += [
        {"role": "assistant", "content": "You said: Hello Cleo"},
        {"role": "user", "content": "Second turn"},
    ]
    second = client.chat.completions.create(model="cleo", messages=messages, user="sam")  # type: ignore[arg-type]
    assert second.choices[0].message.content == "You said: Second turn"
    with served.client() as c:
        episodes = c.get("/v1/personas/cleo/episodes", params={"user_id": "sam"}).json()
    assert len({e["conversation_id"] for e in episodes}) == 1
    assert sorted(e["turn"] for e in episodes) == [1, 2]


def test_a_retried_request_is_answered_from_the_store(
    client: openai.OpenAI, served: Served
) -> None:
    """A repeat the client marks as one (the SDK's ``x-stainless-retry-count``, or the
    same ``Idempotency-Key``) returns the stored reply and records nothing new."""
    messages = [{"role": "user", "content": "Only once please"}]
    first = client.chat.completions.create(model="sonality/cleo", messages=messages, user="ret")  # type: ignore[arg-type]
    again = client.chat.completions.create(
        model="sonality/cleo",
        messages=messages,  # type: ignore[arg-type]
        user="ret",
        extra_headers={"x-stainless-retry-count": "1"},
    )
    assert first.choices[0].message.content == again.choices[0].message.content
    assert first.id == again.id
    keyed = [
        client.chat.completions.create(
            model="sonality/cleo",
            messages=[{"role": "user", "content": "Keyed"}],
            user="ret",
            extra_headers={"Idempotency-Key": "k-1"},
        )
        for _ in range(2)
    ]
    assert keyed[0].id == keyed[1].id
    with served.client() as c:
        episodes = c.get("/v1/personas/cleo/episodes", params={"user_id": "ret"}).json()
    assert len(episodes) == 2


def _turn(client: openai.OpenAI, messages: list[dict[str, str]], user: str) -> str:
    done = client.chat.completions.create(model="sonality/cleo", messages=messages, user=user)  # type: ignore[arg-type]
    text = done.choices[0].message.content
    assert text is not None
    return text


def test_two_chats_with_one_opener_and_an_edit_stay_apart(
    client: openai.OpenAI, served: Served
) -> None:
    """Two chats of one user that open with the same "Hi" are two conversations, each
    continuing its own (even though the echo model answers both alike); editing the last
    message is answered, never a 409; and every turn lands in the right conversation."""
    a = [{"role": "user", "content": "Hi"}]
    a.append({"role": "assistant", "content": _turn(client, a, "two")})
    b = [{"role": "user", "content": "Hi"}]
    b.append({"role": "assistant", "content": _turn(client, b, "two")})
    b.append({"role": "user", "content": "B second"})
    b.append({"role": "assistant", "content": _turn(client, b, "two")})
    a.append({"role": "user", "content": "A second"})
    assert _turn(client, a, "two") == "You said: A second"
    edited = [*a[:-1], {"role": "user", "content": "A second, edited"}]
    assert _turn(client, edited, "two") == "You said: A second, edited"
    assert _turn(client, edited, "two") == "You said: A second, edited"  # a resend: stored
    with served.client() as c:
        episodes = c.get("/v1/personas/cleo/episodes", params={"user_id": "two"}).json()
    by_conversation: dict[str, list[str]] = {}
    for e in sorted(episodes, key=lambda e: e["turn"]):
        by_conversation.setdefault(e["conversation_id"], []).append(e["user_message"])
    assert sorted(by_conversation.values()) == [
        ["Hi", "A second", "A second, edited"],
        ["Hi", "B second"],
    ]


def test_streaming_sends_openai_chunks_and_usage(client: openai.OpenAI) -> None:
    """``stream=True`` yields chunks whose deltas join to the reply, a stop chunk, and a
    usage chunk when ``include_usage`` is asked."""
    stream = client.chat.completions.create(
        model="sonality/cleo",
        messages=[{"role": "user", "content": "Stream this reply word by word"}],
        user="streamer",
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert text == "You said: Stream this reply word by word"
    assert finishes[-1] == "stop" and len(chunks) > 4
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_user_and_conversation_from_headers(client: openai.OpenAI, served: Served) -> None:
    """Without ``user``, the X-Sonality-User header names the user; X-Sonality-Conversation
    names the conversation."""
    done = client.chat.completions.create(
        model="sonality/cleo",
        messages=[{"role": "user", "content": "Headers only"}],
        extra_headers={"X-Sonality-User": "hdr", "X-Sonality-Conversation": "conv-h"},
    )
    assert done.choices[0].message.content == "You said: Headers only"
    with served.client() as c:
        [episode] = c.get("/v1/personas/cleo/episodes", params={"user_id": "hdr"}).json()
    assert episode["conversation_id"] == "conv-h"


def test_chat_errors_are_openai_errors(client: openai.OpenAI, served: Served) -> None:
    """Errors are OpenAI-shaped, so the SDK's ``message``, ``code``, ``type`` and ``param``
    carry the reason: no user is a 400, a bad key a 401, an unknown persona a 404, a model
    outage a 503 with ``Retry-After``."""
    with pytest.raises(openai.BadRequestError) as no_user:
        client.chat.completions.create(
            model="sonality/cleo", messages=[{"role": "user", "content": "who am I"}]
        )
    assert "name the user" in no_user.value.message
    assert (no_user.value.code, no_user.value.type, no_user.value.param) == (
        "validation",
        "invalid_request_error",
        "user",
    )
    stranger = openai.OpenAI(base_url=f"{served.url}/v1", api_key="son_x_y", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as bad_key:
        stranger.models.list()
    assert "not a Sonality API key" in bad_key.value.message
    assert bad_key.value.type == "authentication_error"
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(
            model="sonality/nobody", messages=[{"role": "user", "content": "hi"}], user="u"
        )
    assert "no such persona" in missing.value.message and missing.value.code == "not_found"
    with pytest.raises(openai.InternalServerError) as down:
        client.chat.completions.create(
            model="sonality/cleo", messages=[{"role": "user", "content": "[model down]"}], user="u"
        )
    assert down.value.status_code == 503 and down.value.code == "model"
    assert down.value.response.headers["Retry-After"].isdigit()
    with served.client() as c:  # the persona routes keep Sonality's own error body
        assert c.get("/v1/personas/nobody").json()["kind"] == "not_found"


def test_tools_and_structured_output_are_refused(client: openai.OpenAI) -> None:
    """``tools`` and a JSON ``response_format`` are refused with a 400 naming the field,
    not ignored; a text ``response_format`` and ``n=1`` pass."""
    hi = [{"role": "user", "content": "hi"}]
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError) as tools:
        client.chat.completions.create(model="sonality/cleo", messages=hi, user="t", tools=[tool])  # type: ignore[arg-type, list-item]
    assert tools.value.param == "tools" and "not supported" in tools.value.message
    with pytest.raises(openai.BadRequestError) as schema:
        client.chat.completions.create(
            model="sonality/cleo",
            messages=hi,  # type: ignore[arg-type]
            user="t",
            response_format={"type": "json_object"},
        )
    assert schema.value.param == "response_format"
    done = client.chat.completions.create(
        model="sonality/cleo",
        messages=hi,  # type: ignore[arg-type]
        user="t",
        response_format={"type": "text"},
        n=1,
    )
    assert done.choices[0].message.content == "You said: hi"


def test_the_user_from_metadata_or_safety_identifier(client: openai.OpenAI, served: Served) -> None:
    """``metadata.user_id`` and ``safety_identifier`` (what litellm as a client sends)
    name the user too."""
    hi = [{"role": "user", "content": "From metadata"}]
    client.chat.completions.create(
        model="sonality/cleo",
        messages=hi,  # type: ignore[arg-type]
        metadata={"user_id": "meta"},
    )
    client.chat.completions.create(
        model="sonality/cleo",
        messages=[{"role": "user", "content": "From safety"}],
        extra_body={"safety_identifier": "safe"},
    )
    with served.client() as c:
        for user in ("meta", "safe"):
            got = c.get("/v1/personas/cleo/episodes", params={"user_id": user}).json()
            assert len(got) == 1, user


async def test_the_async_client_streams(client: openai.OpenAI, served: Served) -> None:
    """The async SDK: a completion and a stream."""
    aclient = openai.AsyncOpenAI(
        base_url=str(client.base_url), api_key=client.api_key, max_retries=0
    )
    async with aclient:
        done = await aclient.chat.completions.create(
            model="sonality/cleo", messages=[{"role": "user", "content": "Async"}], user="as"
        )
        assert done.choices[0].message.content == "You said: Async"
        stream = await aclient.chat.completions.create(
            model="sonality/cleo",
            messages=[{"role": "user", "content": "Async stream"}],
            user="as",
            stream=True,
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "You said: Async stream"


def test_litellm_as_a_client(client: openai.OpenAI) -> None:
    """litellm as a client: it drops ``user=`` (so the server's 400 must say why, and
    litellm shows that reason), and its ``safety_identifier=`` names the user."""
    import litellm

    common = {
        "model": "openai/sonality/cleo",
        "api_base": str(client.base_url),
        "api_key": client.api_key,
        "num_retries": 0,
        "max_retries": 0,
    }

    def complete(**kwargs: Any) -> Any:
        # on a thread of its own: on the main thread litellm's service logging asks
        # asyncio.get_event_loop(), which makes a loop there and leaves it open (the
        # suite's warnings then fail a run of this test alone); elsewhere it uses asyncio.run
        with ThreadPoolExecutor(1) as thread:
            return thread.submit(litellm.completion, **kwargs, **common).result()

    cached = set(litellm.in_memory_llm_clients_cache.cache_dict)
    try:
        with pytest.raises(litellm.BadRequestError) as dropped:
            complete(messages=[{"role": "user", "content": "Lite"}], user="lite")
        assert "name the user" in str(dropped.value) and "safety_identifier" in str(dropped.value)
        done = complete(messages=[{"role": "user", "content": "Lite"}], safety_identifier="lite")
        assert done.choices[0].message.content == "You said: Lite"
    finally:
        # litellm keeps the OpenAI client it made in a process-wide cache, its keep-alive
        # connection to this session's server open until the process exits (an unclosed
        # socket at the worker's end): close what this test added
        clients = litellm.in_memory_llm_clients_cache
        for key in set(clients.cache_dict) - cached:
            made = clients.cache_dict.pop(key)
            clients.ttl_dict.pop(key, None)
            if isinstance(made, openai.OpenAI):
                made.close()
