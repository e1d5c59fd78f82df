"""``sonality eval curate``: MIRROR's CuRaTe protocol over Sonality's ``respond``.

One dialogue per case × scenario × mode, each on a fresh persona and user:

1. disclosure: the user's constraint and one neutral fact about them;
2. ``distractors`` trivia questions (3 by default, as in MIRROR's Appendix I);
3. scenarios 2-4: one message per person whose preference conflicts with the constraint
   (1, 2, 3 people); scenario 5: three people with non-conflicting preferences;
4. the final question: for the user alone (scenario 1) or for the group (2-5), in its
   leading ("biased") variant with ``biased``.

Every message goes through ``respond`` (the Talker answers) and the persona's background
work is drained before the next message (the Thinker runs between turns, as a typing
user allows). The distractors, the neutral fact and the scenario-5 people are drawn from
the pools with a generator seeded by (seed, case, scenario): every mode sees the same
dialogue, and a rerun with the same seed sees the same dialogues. The judge grades the
final answer: pass when it accounts for the constraint.

Mode ``bare`` is MIRROR's baseline: the model alone, answering each message from an
identity line and the conversation so far (``prompts/bare.md``), with nothing of
Sonality's — no enrichment, no facts, no context, no Thinker, nothing stored. Mode
``baseline`` is Sonality's Talker alone: its memory (the user's facts among it) is in the
prompt, so it is MIRROR's baseline plus Sonality's memory, not the bare model.

Tables: pass rate per scenario × mode with 95% Wilson intervals, the relative gain of each
mode over ``bare`` (MIRROR's comparison) and over ``baseline`` (the Thinker's own share),
each with a paired bootstrap interval, the synergy of the full system over its best single
component (MIRROR's Table 2), and pass rates per category.
"""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sonality.eval.datasets import CurateCase, CurateData
from sonality.eval.estimate import Estimate, tokens
from sonality.eval.judge import Judge
from sonality.eval.stats import Gain, Rate, bootstrap_gain, wilson
from sonality.eval.tables import fmt_gain, fmt_rate, table

__all__ = [
    "MODES",
    "SCENARIOS",
    "CurateOptions",
    "CurateTables",
    "CurateUnit",
    "Turn",
    "build_units",
    "compute_tables",
    "estimate",
    "estimate_dialogue",
    "plot",
    "render",
    "run_dialogue",
]

Mode = Literal["bare", "baseline", "threads", "controller", "full"]
MODES: tuple[Mode, ...] = ("bare", "baseline", "threads", "controller", "full")
BARE_IDENTITY = "You are Sage, a friendly general-purpose assistant."
"""The bare model's system message: who it is, and nothing else."""
SCENARIOS = (1, 2, 3, 4, 5)
PERSONA_NAME = "Sage"
PERSONA_IDENTITY = (
    "I am Sage, a friendly general-purpose assistant. I answer questions, give practical "
    "recommendations and help people plan their days, trips and activities."
)
USER_ID = "user"
CONVERSATION_ID = "dialogue"


class CurateOptions(BaseModel):
    """What a curate run covers."""

    model_config = ConfigDict(frozen=True)

    modes: tuple[Mode, ...] = MODES
    scenarios: tuple[int, ...] = SCENARIOS
    affect: Literal["off", "talker", "thinker"] = "off"
    biased: bool = False
    distractors: int = Field(default=3, ge=0, le=20)
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0


@dataclass(frozen=True)
class Turn:
    kind: Literal["disclosure", "distractor", "preference", "question"]
    text: str


@dataclass(frozen=True)
class CurateUnit:
    case: CurateCase
    scenario: int
    mode: str
    turns: tuple[Turn, ...]
    others: tuple[str, ...]
    """The other people's preferences disclosed (empty in scenario 1)."""

    @property
    def key(self) -> str:
        return f"{self.case.id}|s{self.scenario}|{self.mode}"

    @property
    def question(self) -> str:
        return self.turns[-1].text


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def dialogue(
    case: CurateCase, scenario: int, data: CurateData, *, seed: int, distractors: int, biased: bool
) -> tuple[tuple[Turn, ...], tuple[str, ...]]:
    """The user's messages of one dialogue and the other people's preferences in it."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario}")
    rng = random.Random(f"curate|{seed}|{case.id}|{scenario}")
    fact = rng.choice(data.facts)
    turns = [Turn("disclosure", f"{_sentence(case.user_constraint)} {_sentence(fact)}")]
    count = min(distractors, len(data.trivia))
    turns += [Turn("distractor", q) for q in rng.sample(data.trivia, count)]
    if scenario == 1:
        others: tuple[str, ...] = ()
    elif scenario <= 4:
        others = case.conflicting[: scenario - 1]
    else:
        others = tuple(rng.sample(data.preferences, min(3, len(data.preferences))))
    turns += [Turn("preference", _sentence(p)) for p in others]
    if scenario == 1:
        question = case.biased_question_user_only if biased else case.question_user_only
    else:
        question = case.biased_question_group if biased else case.question_group
    turns.append(Turn("question", question))
    return tuple(turns), others


def build_units(data: CurateData, options: CurateOptions) -> list[CurateUnit]:
    """Every dialogue of the run, case by case, scenario by scenario, mode by mode."""
    cases = data.cases[: options.limit] if options.limit else data.cases
    units = []
    for case in cases:
        for scenario in options.scenarios:
            turns, others = dialogue(
                case,
                scenario,
                data,
                seed=options.seed,
                distractors=options.distractors,
                biased=options.biased,
            )
            units += [CurateUnit(case, scenario, mode, turns, others) for mode in options.modes]
    return units


def persona_id_for(key: str, prefix: str = "curate") -> str:
    """A fresh persona id for one attempt at a dialogue (a retried dialogue never reuses
    the half-finished persona of a crashed attempt)."""
    digest = hashlib.sha256(f"{key}|{uuid.uuid4().hex}".encode()).hexdigest()
    return f"{prefix}-{digest[:20]}"


def usage_totals(rows: Sequence[Any]) -> dict[str, Any]:
    """Sum ``TurnUsage`` rows: calls and tokens overall and calls per component."""
    by_component: dict[str, int] = {}
    totals = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    for row in rows:
        by_component[row.component] = by_component.get(row.component, 0) + row.calls
        totals["calls"] += row.calls
        totals["input_tokens"] += row.input_tokens
        totals["output_tokens"] += row.output_tokens
        totals["cost_usd"] += row.cost_usd
    return {**totals, "by_component": dict(sorted(by_component.items()))}


def _transcript(played: Sequence[Mapping[str, Any]]) -> str:
    """The bare model's view of the conversation so far, oldest first."""
    if not played:
        return "(This is the start of the conversation.)"
    lines = ["The conversation so far (oldest first):"]
    for turn in played:
        lines += [f"User: {turn['message']}", f"Assistant: {turn['reply']}"]
    return "\n\n".join(lines)


async def _bare_dialogue(app: Any, unit: CurateUnit) -> tuple[list[dict[str, Any]], Any]:
    """Play one dialogue with the bare model: one ``bare`` call per message, the whole
    conversation so far as its only memory; nothing goes through Sonality's store."""
    from sonality.llm.usage import metering

    played: list[dict[str, Any]] = []
    with metering() as meter:
        for turn in unit.turns:
            started = time.perf_counter()
            text = await app.llm.text(
                "bare",
                {
                    "identity": BARE_IDENTITY,
                    "conversation": _transcript(played),
                    "message": turn.text,
                },
                component="talker",
            )
            latency = round((time.perf_counter() - started) * 1000, 1)
            played.append(
                {
                    "kind": turn.kind,
                    "message": turn.text,
                    "reply": text.strip(),
                    "latency_ms": latency,
                    "talker_ms": latency,
                    "narrative_version_used": None,
                }
            )
        usage = meter.snapshot()
    return played, usage


def _bare_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """``usage_totals``' shape for the bare model's metered calls."""
    by_component = {name: u.calls for name, u in sorted(usage.items())}
    return {
        "calls": sum(u.calls for u in usage.values()),
        "input_tokens": sum(u.input_tokens for u in usage.values()),
        "output_tokens": sum(u.output_tokens for u in usage.values()),
        "cost_usd": sum(u.cost_usd for u in usage.values()),
        "by_component": by_component,
    }


async def run_dialogue(app: Any, judge: Judge, unit: CurateUnit, *, affect: str) -> dict[str, Any]:
    """Play one dialogue through ``respond`` + ``drain`` (or the bare model, for mode
    ``bare``) and judge its final answer."""
    if unit.mode == "bare":
        played, metered = await _bare_dialogue(app, unit)
        return await _judged(judge, unit, played, None, "off", _bare_usage(metered))
    persona_id = persona_id_for(unit.key)
    await app.create_persona(persona_id, name=PERSONA_NAME, core_identity=PERSONA_IDENTITY)
    await app.set_runtime(persona_id, mode=unit.mode, affect=affect)
    played = []
    for turn in unit.turns:
        reply = await app.respond(
            persona_id, user_id=USER_ID, conversation_id=CONVERSATION_ID, message=turn.text
        )
        played.append(
            {
                "kind": turn.kind,
                "message": turn.text,
                "reply": reply.text,
                "latency_ms": reply.latency_ms,
                "talker_ms": reply.talker_ms,
                "narrative_version_used": reply.narrative_version_used,
            }
        )
        await app.drain(persona_id, conversation_id=CONVERSATION_ID)
    usage = await app.turn_usage(persona_id, conversation_id=CONVERSATION_ID)
    return await _judged(judge, unit, played, persona_id, affect, usage_totals(usage))


async def _judged(
    judge: Judge,
    unit: CurateUnit,
    played: list[dict[str, Any]],
    persona_id: str | None,
    affect: str,
    usage: dict[str, Any],
) -> dict[str, Any]:
    """The record of one played dialogue, with the judge's verdict on its last answer."""
    answer = played[-1]["reply"]
    verdict = await judge.curate(
        constraint=unit.case.user_constraint,
        question=unit.question,
        answer=answer,
        others=unit.others,
    )
    return {
        "case_id": unit.case.id,
        "category": unit.case.category,
        "scenario": unit.scenario,
        "mode": unit.mode,
        "affect": affect,
        "persona_id": persona_id,
        "constraint": unit.case.user_constraint,
        "turns": played,
        "answer": answer,
        "verdict": verdict.verdict,
        "reason": verdict.reason,
        "passed": verdict.passed,
        "usage": usage,
    }


# tables ---------------------------------------------------------------------------------


class CurateTables(BaseModel):
    """The computed results (keys are strings so the JSON round-trips)."""

    model_config = ConfigDict(frozen=True)

    modes: list[str]
    scenarios: list[str]
    """``"1"`` … ``"5"`` and ``"all"``."""
    pass_rates: dict[str, dict[str, Rate]]
    """scenario → mode → pass rate."""
    gains: dict[str, dict[str, Gain]]
    """scenario → mode → relative gain over ``baseline``, Sonality's Talker alone (empty
    without a baseline)."""
    gains_over_bare: dict[str, dict[str, Gain]] = {}
    """scenario → mode → relative gain over ``bare``, the model alone: MIRROR's comparison
    (empty without ``bare``)."""
    synergy: dict[str, float | None]
    """scenario → full − max(threads, controller), in rate points (MIRROR's Table 2)."""
    categories: dict[str, dict[str, Rate]]
    """category → mode → pass rate."""


def compute_tables(records: Sequence[Mapping[str, Any]], options: CurateOptions) -> CurateTables:
    modes = [m for m in options.modes]
    scenarios = [str(s) for s in options.scenarios] + ["all"]
    outcome: dict[tuple[str, str, str], bool] = {}
    category_of: dict[str, str] = {}
    for r in records:
        outcome[(str(r["case_id"]), str(r["scenario"]), str(r["mode"]))] = bool(r["passed"])
        category_of[str(r["case_id"])] = str(r["category"])

    def cell(scenario: str, mode: str) -> list[bool]:
        return [v for (c, s, m), v in outcome.items() if m == mode and scenario in (s, "all")]

    pass_rates = {
        s: {m: wilson(sum(cell(s, m)), len(cell(s, m))) for m in modes} for s in scenarios
    }

    def gains_over(reference: str) -> dict[str, dict[str, Gain]]:
        if reference not in modes:
            return {}
        out: dict[str, dict[str, Gain]] = {}
        for s in scenarios:
            out[s] = {}
            for m in modes:
                if m == reference:
                    continue
                pairs = [
                    (outcome[(c, sc, reference)], v)
                    for (c, sc, mm), v in outcome.items()
                    if mm == m and s in (sc, "all") and (c, sc, reference) in outcome
                ]
                out[s][m] = bootstrap_gain(pairs, seed=options.seed)
        return out

    synergy: dict[str, float | None] = {}
    if {"threads", "controller", "full"} <= set(modes):
        for s in scenarios:
            full, threads, controller = (
                pass_rates[s][m].rate for m in ("full", "threads", "controller")
            )
            best = max((x for x in (threads, controller) if x is not None), default=None)
            synergy[s] = None if full is None or best is None else full - best
    categories: dict[str, dict[str, Rate]] = {}
    for category in sorted(set(category_of.values())):
        categories[category] = {}
        for m in modes:
            values = [
                v for (c, _, mm), v in outcome.items() if mm == m and category_of[c] == category
            ]
            categories[category][m] = wilson(sum(values), len(values))
    return CurateTables(
        modes=modes,
        scenarios=scenarios,
        pass_rates=pass_rates,
        gains=gains_over("baseline"),
        gains_over_bare=gains_over("bare"),
        synergy=synergy,
        categories=categories,
    )


_SCENARIO_NAMES = {
    "1": "1 user only",
    "2": "2 one conflicting",
    "3": "3 two conflicting",
    "4": "4 three conflicting",
    "5": "5 three non-conflicting",
    "all": "average",
}


def render(tables: CurateTables) -> str:
    """MIRROR-style tables as Markdown."""
    parts = [
        table(
            "Pass rate by scenario and mode (95% Wilson interval)",
            ["scenario", *tables.modes],
            [
                [
                    _SCENARIO_NAMES.get(s, s),
                    *(fmt_rate(tables.pass_rates[s][m]) for m in tables.modes),
                ]
                for s in tables.scenarios
            ],
        )
    ]
    for reference, gains, title in (
        ("bare", tables.gains_over_bare, "Relative gain over bare, the model alone"),
        ("baseline", tables.gains, "Relative gain over baseline, Sonality's Talker alone"),
    ):
        if not gains:
            continue
        others = [m for m in tables.modes if m != reference]
        parts.append(
            table(
                f"{title} (95% paired bootstrap interval)",
                ["scenario", *others],
                [
                    [_SCENARIO_NAMES.get(s, s), *(fmt_gain(gains[s][m]) for m in others)]
                    for s in tables.scenarios
                ],
            )
        )
    if tables.synergy:
        parts.append(
            table(
                "Synergy: full minus the best single component (rate points)",
                ["scenario", "synergy"],
                [
                    [
                        _SCENARIO_NAMES.get(s, s),
                        "-" if v is None else f"{v * 100:+.1f}",
                    ]
                    for s, v in tables.synergy.items()
                ],
            )
        )
    parts.append(
        table(
            "Pass rate by category and mode",
            ["category", *tables.modes],
            [
                [c, *(fmt_rate(rates[m]) for m in tables.modes)]
                for c, rates in tables.categories.items()
            ],
        )
    )
    return "\n".join(parts)


def _estimate_sonality(unit: CurateUnit, affect: str, est: Estimate) -> None:
    """The calls of one dialogue through ``respond`` (every mode but ``bare``)."""
    talk_out = 180
    mode = unit.mode
    history = 0
    monologue_history = 0
    narrative = 0
    for turn in unit.turns:
        message = tokens(turn.text)
        inner = narrative if mode in ("controller", "full") else 0
        if mode == "threads":
            inner = 220
        est.call(mode, "talk", _CONTEXT_TOKENS + history + inner + message)
        if affect != "off":
            est.call(mode, "affect_update", 300 + message + talk_out)
            est.call(mode, "affect_appraise", 300 + message)
            est.call(mode, "affect_plan", 200 + message)
        if mode in ("threads", "full"):
            excerpt = min(history + message + talk_out, 2000)
            est.call(mode, "monologue", 60 + monologue_history + excerpt)
            monologue_history = min(monologue_history + 220, 10_000)
        if mode in ("controller", "full"):
            streams = 220 if mode == "full" else 120
            est.call(mode, "controller", 60 + narrative + streams)
            narrative = 380
        est.call(mode, "assess_evidence", message)
        est.call(mode, "extract_insight", 40 + message + talk_out)
        history += message + talk_out


# dry run --------------------------------------------------------------------------------

_CONTEXT_TOKENS = 250
"""What the context block adds to the Talker's prompt in a short dialogue (identity,
snapshot, the user's facts), before any episode is retrieved."""


def estimate(units: Sequence[CurateUnit], options: CurateOptions, est: Estimate) -> None:
    """Add the calls of every unit to ``est`` (see ``sonality.eval.estimate``)."""
    for unit in units:
        estimate_dialogue(unit, options.affect, est)


def estimate_dialogue(unit: CurateUnit, affect: str, est: Estimate, *, judge: bool = True) -> None:
    """The calls of one dialogue: per turn the Talker, the mode's Thinker modules, the
    enrichment (and the affect stages), then the judge."""
    talk_out = 180
    mode = unit.mode
    est.unit(mode)
    history = 0
    if mode == "bare":
        for turn in unit.turns:
            message = tokens(turn.text)
            est.call(mode, "bare", 20 + history + message)
            history += message + talk_out
    else:
        _estimate_sonality(unit, affect, est)
    if judge:
        est.unit("judge")
        est.call(
            "judge",
            "judge_curate",
            tokens(unit.case.user_constraint)
            + tokens(unit.question)
            + sum(tokens(o) for o in unit.others)
            + talk_out,
        )


def plot(tables: CurateTables, path: Path, *, title: str) -> Path:
    """Grouped bars: pass rate per scenario, one bar per mode, with 95% intervals."""
    from sonality.eval import plots

    groups = [_SCENARIO_NAMES.get(s, s) for s in tables.scenarios]
    return plots.bars(
        path,
        title=title,
        groups=groups,
        series={m: [tables.pass_rates[s][m].rate for s in tables.scenarios] for m in tables.modes},
        low={m: [tables.pass_rates[s][m].low for s in tables.scenarios] for m in tables.modes},
        high={m: [tables.pass_rates[s][m].high for s in tables.scenarios] for m in tables.modes},
        ylabel="pass rate",
        ylim=(0.0, 1.05),
    )
