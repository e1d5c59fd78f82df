"""Issue 25.3: each prompt's generation settings (front matter: temperature, max_tokens)
reach the model. A persona answers, thinks and feels through the real ``LiteLLM``
adapter against the fake OpenAI-compatible endpoint, on both transports; every request
the endpoint logged carries the temperature and ``max_tokens`` the README's table states
for its prompt, and the table agrees with the prompt files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sonality.llm.embedders import HashEmbedder
from sonality.llm.litellm_llm import LiteLLM
from sonality.llm.prompts import Prompt, PromptLibrary
from sonality.service import Sonality
from sonality.testing import FrozenClock
from sonality.testing.openai_server import ChatRequest, FakeOpenAI
from tests.conftest import EMBEDDING_DIMENSIONS

README = Path(__file__).parents[2] / "README.md"
ROW = re.compile(r"^\| `(\w+)` \| (provider default|[\d.]+) \| (\d+) \|", re.M)


def readme_settings() -> dict[str, tuple[float | None, int]]:
    """The README's *Generation settings* table: prompt → (temperature, max_tokens)."""
    rows = ROW.findall(README.read_text(encoding="utf-8"))
    return {
        name: (None if temperature == "provider default" else float(temperature), int(tokens))
        for name, temperature, tokens in rows
    }


def _signature(text: str | None, shortest: int = 25) -> str | None:
    """A line of a prompt's own text with no placeholder, long enough to be its own."""
    for line in (text or "").splitlines():
        if "$" not in line and len(line.strip()) >= shortest:
            return line.strip()
    return None


def prompt_of(request: ChatRequest, library: PromptLibrary) -> str:
    """Which prompt file a logged request was rendered from: the one whose own system
    text (else user text) it contains, system matches first."""
    sent = request.system + "\n" + request.text
    by_system, by_user = [], []
    for name in Prompt:
        template = library.get(name)
        system = None if template.system is None else template.system.template
        mark = _signature(system)
        if mark is not None:
            if mark in request.system:
                by_system.append(name.value)
        elif (mark := _signature(template.user.template, 12)) is not None and mark in sent:
            by_user.append(name.value)
    found = by_system or by_user
    assert len(found) == 1, (found, request.system[:200])
    return found[0]


def test_the_readme_table_matches_every_prompt_file() -> None:
    """One row per shipped prompt, with its front matter's values."""
    library = PromptLibrary()
    table = readme_settings()
    assert set(table) == {p.value for p in Prompt}
    for name in Prompt:
        generation = library.generation(name)
        assert table[name.value] == (generation.temperature, generation.max_tokens), name


@pytest.mark.parametrize("transport", ["direct", "litellm"])
async def test_every_request_carries_its_prompts_settings(
    sqlite_store: Any, transport: str
) -> None:
    """Two turns in full mode with affect in the Talker, two with affect in the Thinker,
    a forced reflection, a bare-model call and a ping: the endpoint's log shows, for every
    request, the README's temperature (absent when it says "provider default") and
    max_tokens for the prompt it came from."""
    table = readme_settings()
    library = PromptLibrary()
    with FakeOpenAI() as server:
        llm = LiteLLM(
            "openai/fake-model",
            api_base=server.url,
            api_key="unused",
            transport=transport,  # type: ignore[arg-type]
            max_retries=0,
        )
        app = Sonality(
            store=sqlite_store,
            llm=llm,
            embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
            clock=FrozenClock(),
        )
        try:
            await app.create_persona("ada", name="Ada", core_identity="I am Ada, curious.")
            for n, affect in enumerate(("talker", "talker", "thinker", "thinker")):
                await app.set_runtime("ada", mode="full", affect=affect)
                await app.respond(
                    "ada", user_id="u1", conversation_id="c1", message=f"Message {n} here."
                )
                await app.drain("ada", conversation_id="c1")
            await app.reflect("ada", force=True)
            await llm.text(
                "bare",
                {"identity": "You are Sage.", "conversation": "(start)", "message": "Hi"},
                component="talker",
            )
            await llm.text(Prompt.PING, {}, component="doctor")
        finally:
            await app.close()
        requests = server.chat_requests()
    seen: dict[str, int] = {}
    for request in requests:
        name = prompt_of(request, library)
        temperature, max_tokens = table[name]
        assert request.body.get("temperature") == temperature, name
        assert request.body.get("max_tokens") == max_tokens, name
        seen[name] = seen.get(name, 0) + 1
    assert {
        "talk",
        "formulate",
        "monologue",
        "controller",
        "affect_update",
        "affect_appraise",
        "affect_plan",
        "assess_evidence",
        "extract_insight",
        "reflect",
        "bare",
        "ping",
    } <= set(seen), seen
    assert seen["formulate"] == 2 and seen["talk"] == 2  # affect in the Talker, then not
