"""The OpenAI-compatible endpoints against a real server on each store, driven with the
official ``openai`` SDK: chat completions (plain and streamed, with usage), the persona
as the model, the user from the ``user`` field or a header, a conversation from a
header or derived from the history, and retries that do not record a turn twice."""

from __future__ import annotations

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
    """Sending the same history again returns the stored reply and records nothing new."""
    messages = [{"role": "user", "content": "Only once please"}]
    first = client.chat.completions.create(model="sonality/cleo", messages=messages, user="ret")  # type: ignore[arg-type]
    again = client.chat.completions.create(model="sonality/cleo", messages=messages, user="ret")  # type: ignore[arg-type]
    assert first.choices[0].message.content == again.choices[0].message.content
    assert first.id == again.id
    with served.client() as c:
        episodes = c.get("/v1/personas/cleo/episodes", params={"user_id": "ret"}).json()
    assert len(episodes) == 1


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


def test_chat_errors_are_openai_errors(client: openai.OpenAI) -> None:
    """No user is a 400, an unknown persona a 404, a model outage a 503 — each raised by
    the SDK as its error type with Sonality's error body."""
    with pytest.raises(openai.BadRequestError) as no_user:
        client.chat.completions.create(
            model="sonality/cleo", messages=[{"role": "user", "content": "who am I"}]
        )
    assert no_user.value.response.json()["kind"] == "validation"
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="sonality/nobody", messages=[{"role": "user", "content": "hi"}], user="u"
        )
    with pytest.raises(openai.InternalServerError) as down:
        client.chat.completions.create(
            model="sonality/cleo", messages=[{"role": "user", "content": "[model down]"}], user="u"
        )
    assert down.value.status_code == 503
