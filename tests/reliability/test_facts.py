"""Issue 15.4: facts are bounded per reply, deduplicated per user, and the pinned-facts
section of ``context`` is bounded and never drops facts silently. On both stores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sonality.mind.enrichment_prompt import MAX_FACTS
from sonality.service import Sonality
from sonality.testing import ScriptedLLM

NEUTRAL = {
    "score": 0.5,
    "reasoning_type": "none",
    "source_reliability": 0.5,
    "internal_consistency": 0.5,
    "novelty": 0.5,
    "topics": [],
    "direction": "neutral",
}


def fact(n: int, *, kind: str = "preference", severity: int = 2) -> dict[str, Any]:
    return {
        "kind": kind,
        "text": f"The user collects stamp series number {n}.",
        "severity": severity,
    }


def replying(*facts_per_turn: list[dict[str, Any]]) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(
        "assess_evidence",
        *({"evidence": NEUTRAL, "facts": facts, "importance": 3} for facts in facts_per_turn),
    )
    llm.default("extract_insight", {"insight": None})
    return llm


async def talk(app: Sonality, turns: int, user: str = "u1") -> None:
    await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
    for n in range(turns):
        await app.record("ada", user_id=user, conversation_id="c", message=f"m{n}", response="r")


async def test_one_reply_keeps_at_most_the_cap_constraints_first(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """A reply with 60 facts (as many as fit the prompt's max_tokens) stores MAX_FACTS of
    them: the constraint among them first, then the most severe; the episode says facts
    were defaulted (cut, not silent)."""
    flood = [fact(n, severity=1 + n % 4) for n in range(59)]
    flood.append(fact(999, kind="constraint", severity=1))
    await talk(make_app(replying(flood)), 1)
    stored = await store.list_facts("ada", "u1")
    assert len(stored) == MAX_FACTS
    assert any(f.kind.value == "constraint" for f in stored)
    most_severe = sorted((f["severity"] for f in flood[:-1]), reverse=True)[: MAX_FACTS - 1]
    kept = sorted((f.severity for f in stored if f.kind.value != "constraint"), reverse=True)
    assert kept == most_severe
    (episode,) = await store.list_episodes("ada")
    assert "facts" in episode.defaulted


async def test_facts_are_deduplicated_per_user_after_normalising(
    make_app: Callable[..., Sonality], store: Any
) -> None:
    """The same fact told again (other case, spacing, punctuation) is stored once per
    user; another user telling it gets their own copy."""
    spellings = [
        [fact(1)],
        [{**fact(1), "text": "the user  COLLECTS stamp series number 1"}],
        [fact(1), fact(1)],
    ]
    app = make_app(replying(*spellings, [fact(1)]))
    await talk(app, 3)
    await app.record("ada", user_id="u2", conversation_id="c2", message="m", response="r")
    assert len(await store.list_facts("ada", "u1")) == 1
    assert len(await store.list_facts("ada", "u2")) == 1


async def test_the_pinned_facts_section_is_bounded_and_says_what_it_left_out(
    make_app: Callable[..., Sonality],
) -> None:
    """200 facts over 10 replies give a context within budget whose facts section keeps
    the constraints and states how many facts were left out (none dropped silently)."""
    replies = [
        [fact(t * 20 + n, kind="constraint" if n == 0 else "preference") for n in range(20)]
        for t in range(10)
    ]
    app = make_app(replying(*replies))
    await talk(app, 10)
    assert len(await app.facts("ada", user_id="u1")) == 200
    context = await app.context("ada", user_id="u1", message="hello")
    shown = len(context.facts)
    assert 0 < shown < 200
    assert context.facts_omitted == 200 - shown
    assert [f.kind.value for f in context.facts[:10]] == ["constraint"] * 10
    prompt = context.as_prompt()
    assert f"{context.facts_omitted} more facts about this user" in prompt
    assert len(prompt) < 12_000
