"""``sonality.testing.openai_server``: an OpenAI-compatible fake over real HTTP."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from pydantic import BaseModel

from sonality.errors import LLMResponseInvalid, LLMUnavailable
from sonality.llm.litellm_llm import LiteLLM
from sonality.llm.prompts import PromptLibrary
from sonality.mind.affect import AffectUpdateReply, AppraisalReply
from sonality.mind.enrichment import EvidenceReply, InsightReply
from sonality.mind.reflection_prompt import ReflectReply
from sonality.mind.thinker import MonologueReply
from sonality.testing.openai_server import ChatRequest, FakeOpenAI, Fault, synthesize


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode())
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def _llm(server: FakeOpenAI, **kwargs: Any) -> LiteLLM:
    kwargs.setdefault("max_retries", 0)
    return LiteLLM("openai/fake-model", api_base=server.url, api_key="unused", **kwargs)


@pytest.mark.parametrize(
    "schema",
    [EvidenceReply, InsightReply, MonologueReply, AffectUpdateReply, AppraisalReply, ReflectReply],
)
def test_synthesised_objects_validate_for_every_reply_schema(schema: type[BaseModel]) -> None:
    """A value synthesised from the JSON schema pydantic emits validates against the model
    itself, for every structured reply Sonality asks for."""
    value = synthesize(schema.model_json_schema(), seed="x")
    schema.model_validate(value)
    assert synthesize(schema.model_json_schema(), seed="x") == value


def test_synthesis_respects_bounds_refs_and_enums() -> None:
    """Numbers stay inside (exclusive) bounds, strings meet their minimum length, arrays
    their minimum size, $ref and anyOf resolve, enums pick a listed value, null is
    avoided when another type is allowed."""
    schema = {
        "$defs": {"Kind": {"enum": ["alpha", "beta"]}},
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "count": {"type": "integer", "exclusiveMinimum": 3, "maximum": 9},
            "name": {"type": "string", "minLength": 40},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "kind": {"$ref": "#/$defs/Kind"},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]},
            "flag": {"type": ["null", "boolean"]},
        },
    }
    value = synthesize(schema)
    assert 0 <= value["score"] <= 1
    assert 3 < value["count"] <= 9 and isinstance(value["count"], int)
    assert len(value["name"]) >= 40
    assert len(value["tags"]) == 2 and all(t.strip() for t in value["tags"])
    assert value["kind"] in ("alpha", "beta")
    assert isinstance(value["maybe"], int) and value["maybe"] >= 5
    assert value["flag"] is False


async def test_every_prompt_works_through_litellm() -> None:
    """The real LiteLLM adapter gets a valid structured reply for every structured
    prompt and a non-empty text for the others, with usage counted."""
    with FakeOpenAI() as server:
        llm = _llm(server)
        reply = await llm.structured(
            "assess_evidence",
            {"user_message": "hi", "known_facts": "(none yet)"},
            EvidenceReply,
            component="t",
        )
        assert reply.evidence is not None
        text = await llm.text("ping", {}, component="t")
        assert text.strip()
        assert llm.usage.total().calls == 2 and llm.usage.total().input_tokens > 0
        [first, second] = server.chat_requests()
        assert first.schema is not None and first.schema_name == "EvidenceReply"
        assert second.schema is None


async def test_scripted_answers_see_the_request() -> None:
    """An answer callable sees the messages and schema; its string or mapping is the
    reply, None falls back to synthesis, Fault answers with an HTTP error."""
    seen: list[ChatRequest] = []

    def answer(request: ChatRequest) -> Any:
        seen.append(request)
        if "pong" in request.last_user:
            return "pong, scripted"
        if request.schema_name == "InsightReply":
            return {"insight": "I like tests."}
        if request.schema_name == "MonologueReply":
            raise Fault(400, "no monologue today")
        return None

    with FakeOpenAI(answer=answer) as server:
        llm = _llm(server)
        assert await llm.text("ping", {}, component="t") == "pong, scripted"
        insight = await llm.structured(
            "extract_insight",
            {"persona_name": "A", "core_identity": "B", "user_message": "C", "agent_response": "D"},
            InsightReply,
            component="t",
        )
        assert insight.insight == "I like tests."
        evidence = await llm.structured(
            "assess_evidence",
            {"user_message": "x", "known_facts": "(none yet)"},
            EvidenceReply,
            component="t",
        )
        assert evidence.importance is not None
        with pytest.raises(Exception, match="rejected"):
            await llm.structured(
                "monologue",
                {
                    "persona_name": "A",
                    "core_identity": "B",
                    "history": "",
                    "excerpt": "",
                    "turn": 1,
                },
                MonologueReply,
                component="t",
            )
    assert [r.schema_name for r in seen] == [
        None,
        "InsightReply",
        "EvidenceReply",
        "MonologueReply",
    ]


async def test_error_rate_is_seeded_and_retried() -> None:
    """With an error rate, the same seed fails the same requests; the adapter retries
    them and gives up with LLMUnavailable when every attempt fails."""

    def outcomes(seed: int) -> list[int]:
        with FakeOpenAI(error_rate=0.5, seed=seed) as server:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            return [_post(server.url + "/chat/completions", body)[0] for _ in range(20)]

    first = outcomes(7)
    assert first == outcomes(7) and first != outcomes(8)
    assert set(first) == {200, 500}
    with FakeOpenAI(error_rate=1.0) as server:
        llm = _llm(server, max_retries=2, backoff_base=0.001)
        with pytest.raises(LLMUnavailable):
            await llm.text("ping", {}, component="t")
        assert len(server.requests) == 3


async def test_invalid_json_is_reasked_then_fails() -> None:
    """Invalid JSON for every structured reply makes the adapter re-ask once, then raise
    LLMResponseInvalid."""
    with FakeOpenAI(invalid_json_rate=1.0) as server:
        with pytest.raises(LLMResponseInvalid):
            await _llm(server).structured(
                "assess_evidence",
                {"user_message": "x", "known_facts": "(none yet)"},
                EvidenceReply,
                component="t",
            )
        assert len(server.chat_requests()) == 2


async def test_latency_and_hang() -> None:
    """Latency delays every reply; a hang blocks requests until released, and stop()
    releases hung requests with a 503."""
    with FakeOpenAI(latency=0.2) as server:
        started = time.perf_counter()
        await _llm(server).text("ping", {}, component="t")
        assert time.perf_counter() - started >= 0.2
    server = FakeOpenAI().start()
    try:
        server.hang()
        task = asyncio.create_task(_llm(server, timeout=5).text("ping", {}, component="t"))
        await asyncio.sleep(0.3)
        assert not task.done()
        server.release()
        assert (await asyncio.wait_for(task, 5)).strip()
        server.hang()
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        hung = asyncio.create_task(asyncio.to_thread(_post, server.url + "/chat/completions", body))
        await asyncio.sleep(0.2)
    finally:
        server.stop()
    status, _ = await asyncio.wait_for(hung, 5)
    assert status == 503


def test_embeddings_models_and_streaming() -> None:
    """/v1/embeddings returns unit vectors of the asked dimension, deterministic per
    text; /v1/models lists the model; stream=true answers as server-sent events."""
    with FakeOpenAI(model="fake-model") as server:
        status, body = _post(
            server.url + "/embeddings", {"model": "e", "input": ["a", "b", "a"], "dimensions": 8}
        )
        assert status == 200 and isinstance(body, dict)
        vectors = [d["embedding"] for d in body["data"]]
        assert len(vectors) == 3 and all(len(v) == 8 for v in vectors)
        assert vectors[0] == vectors[2] != vectors[1]
        assert abs(sum(x * x for x in vectors[0]) - 1) < 1e-9
        with urllib.request.urlopen(server.url + "/models", timeout=10) as response:
            assert json.loads(response.read())["data"][0]["id"] == "fake-model"
        status, stream = _post(
            server.url + "/chat/completions",
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert status == 200 and isinstance(stream, str)
        events = [line[6:] for line in stream.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        pieces = [json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events[:-1]]
        assert "".join(pieces).strip()
        status, _ = _post(server.url + "/nowhere", {})
        assert status == 404


def test_prompt_library_has_the_judge_prompts() -> None:
    """The judge prompts ship beside the others and render strictly."""
    library = PromptLibrary()
    for name in ("judge_curate", "judge_stance", "judge_traits"):
        assert name in library
    assert {"constraint", "question", "answer", "others"} == library.get(
        "judge_curate"
    ).placeholders
