"""``sonality eval latency``: MIRROR's Appendix I method over ``respond``.

Each CuRaTe case becomes a five-turn conversation (introduction with the constraint,
three distractor questions, the critical question; scenario 1's dialogue) played by a
simulated person: after each reply they *read* it (250 words a minute ± 15%), *think*
(1-2 s) and *type* the next message (40 words a minute ± 20%); the first message is not
typed (Appendix I counts no typing before the first turn) and the last reply is not read.
While the person reads, thinks and types, the Thinker works; the simulation waits on
``drain`` for at most that gap, so it measures whether background work finishes before
the next message — and when it does not, the next message is sent anyway, as a person
would.

Per turn: the Talker's user-facing latency (``respond`` wall time), whether the previous
turn's background work finished within the gap and how long it took, the background
queue (turns of the conversation not yet thought about) when the message is sent, and
whether the Talker used the narrative written after the previous turn (fresh). Every
human delay is drawn from a generator seeded by (seed, case) and multiplied by
``time_scale`` (1.0 = real time; tests use a small one with a fast fake model).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sonality.eval.curate import (
    CONVERSATION_ID,
    PERSONA_IDENTITY,
    PERSONA_NAME,
    USER_ID,
    Mode,
    Turn,
    dialogue,
    persona_id_for,
    usage_totals,
)
from sonality.eval.datasets import CurateCase, CurateData
from sonality.eval.estimate import Estimate
from sonality.eval.stats import Spread, describe
from sonality.eval.tables import fmt_num, fmt_spread_ms, table

__all__ = [
    "LatencyOptions",
    "LatencyTables",
    "LatencyUnit",
    "build_units",
    "compute_tables",
    "estimate",
    "plot",
    "render",
    "run_conversation",
]

KIND_NAMES = {"disclosure": "introduction", "distractor": "distractor", "question": "critical"}


class LatencyOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    modes: tuple[Mode, ...] = ("baseline", "full")
    affect: Literal["off", "talker", "thinker"] = "off"
    distractors: int = Field(default=3, ge=0, le=20)
    typing_wpm: float = Field(default=40.0, gt=0)
    typing_jitter: float = Field(default=0.20, ge=0, lt=1)
    reading_wpm: float = Field(default=250.0, gt=0)
    reading_jitter: float = Field(default=0.15, ge=0, lt=1)
    think_min_s: float = Field(default=1.0, ge=0)
    think_max_s: float = Field(default=2.0, ge=0)
    time_scale: float = Field(default=1.0, gt=0)
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0


@dataclass(frozen=True)
class LatencyUnit:
    case: CurateCase
    mode: str
    turns: tuple[Turn, ...]

    @property
    def key(self) -> str:
        return f"{self.case.id}|{self.mode}"


def build_units(data: CurateData, options: LatencyOptions) -> list[LatencyUnit]:
    cases = data.cases[: options.limit] if options.limit else data.cases
    units = []
    for case in cases:
        turns, _ = dialogue(
            case, 1, data, seed=options.seed, distractors=options.distractors, biased=False
        )
        units += [LatencyUnit(case, mode, turns) for mode in options.modes]
    return units


def _words(text: str) -> int:
    return max(1, len(text.split()))


class Human:
    """The simulated person's timing, seeded per conversation (the same for every mode)."""

    def __init__(self, options: LatencyOptions, case_id: str) -> None:
        self._o = options
        self._rng = random.Random(f"latency|{options.seed}|{case_id}")

    def _jitter(self, spread: float) -> float:
        return 1 + self._rng.uniform(-spread, spread)

    def reading(self, text: str) -> float:
        wpm = self._o.reading_wpm * self._jitter(self._o.reading_jitter)
        return 60.0 * _words(text) / wpm

    def typing(self, text: str) -> float:
        wpm = self._o.typing_wpm * self._jitter(self._o.typing_jitter)
        return 60.0 * _words(text) / wpm

    def thinking(self) -> float:
        return self._rng.uniform(self._o.think_min_s, max(self._o.think_min_s, self._o.think_max_s))


async def run_conversation(app: Any, unit: LatencyUnit, options: LatencyOptions) -> dict[str, Any]:
    """Play one conversation with simulated human timing (see the module docstring)."""
    scale = options.time_scale
    human = Human(options, unit.case.id)
    persona_id = persona_id_for(f"latency|{unit.key}", "latency")
    await app.create_persona(persona_id, name=PERSONA_NAME, core_identity=PERSONA_IDENTITY)
    await app.set_runtime(persona_id, mode=unit.mode, affect=options.affect)
    thinking_mode = unit.mode != "baseline" or options.affect == "thinker"
    played: list[dict[str, Any]] = []
    previous_reply = ""
    for index, turn in enumerate(unit.turns):
        row: dict[str, Any] = {"turn": index + 1, "kind": KIND_NAMES[turn.kind]}
        if index > 0:
            reading = human.reading(previous_reply) * scale
            thinking = human.thinking() * scale
            typing = human.typing(turn.text) * scale
            gap = reading + thinking + typing
            started = time.monotonic()
            finished = await app.drain(persona_id, conversation_id=CONVERSATION_ID, max_seconds=gap)
            background_s = time.monotonic() - started
            rest = gap - background_s
            if rest > 0:
                await asyncio.sleep(rest)
            states = await app.thinker_turns(persona_id, conversation_id=CONVERSATION_ID)
            queue = sum(1 for s in states if s.status.value in ("pending", "failed"))
            played[-1]["reading_s"] = reading  # reading belongs to the reply being read
            row.update(
                thinking_s=thinking,
                typing_s=typing,
                gap_s=gap,
                background_done=finished,
                background_s=background_s if finished else None,
                queue=queue,
            )
        reply = await app.respond(
            persona_id, user_id=USER_ID, conversation_id=CONVERSATION_ID, message=turn.text
        )
        row.update(
            response_ms=reply.latency_ms,
            talker_ms=reply.talker_ms,
            narrative_version_used=reply.narrative_version_used,
        )
        if index > 0 and thinking_mode:
            row["fresh"] = bool(row["background_done"])
        played.append(row)
        previous_reply = reply.text
    await app.drain(persona_id, conversation_id=CONVERSATION_ID)
    usage = await app.turn_usage(persona_id, conversation_id=CONVERSATION_ID)
    return {
        "case_id": unit.case.id,
        "mode": unit.mode,
        "persona_id": persona_id,
        "time_scale": scale,
        "turns": played,
        "usage": usage_totals(usage),
    }


# tables ---------------------------------------------------------------------------------


class ModeLatency(BaseModel):
    model_config = ConfigDict(frozen=True)

    response_ms: Spread
    talker_ms: Spread
    background_s: Spread
    """Time from the reply to the end of the background work, for gaps it fitted in."""
    gaps: int
    """Turns after the first (each preceded by a human gap)."""
    background_within_gap: float | None
    """Share of gaps in which the previous turn's background work finished."""
    fresh_share: float | None
    """Share of turns after the first answered with the previous turn's thought (None in
    baseline without affect: nothing to be fresh)."""
    queue_lengths: dict[str, int]
    """Background queue length when a message was sent → number of turns."""
    queue_mean: float | None
    queue_max: int
    time_breakdown: dict[str, float]
    """Seconds: typing, reading, thinking (human), response (the Talker)."""
    by_kind: dict[str, dict[str, float | None]]
    """Turn type → average typing, reading and response seconds."""


class LatencyTables(BaseModel):
    model_config = ConfigDict(frozen=True)

    modes: list[str]
    per_mode: dict[str, ModeLatency]
    overhead_ms: dict[str, float | None]
    """Mean response time minus the baseline's, per mode."""
    time_scale: float


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def compute_tables(records: Sequence[Mapping[str, Any]], options: LatencyOptions) -> LatencyTables:
    per_mode: dict[str, ModeLatency] = {}
    for mode in options.modes:
        turns = [t for r in records if r["mode"] == mode for t in r["turns"]]
        later = [t for t in turns if t["turn"] > 1]
        queues: dict[str, int] = {}
        for t in later:
            queues[str(t["queue"])] = queues.get(str(t["queue"]), 0) + 1
        fresh = [t["fresh"] for t in later if "fresh" in t]
        breakdown = {
            "typing": sum(t.get("typing_s", 0.0) for t in turns),
            "reading": sum(t.get("reading_s", 0.0) for t in turns),
            "thinking": sum(t.get("thinking_s", 0.0) for t in turns),
            "response": sum(t["response_ms"] for t in turns) / 1000,
        }
        by_kind: dict[str, dict[str, float | None]] = {}
        for kind in ("introduction", "distractor", "critical"):
            of_kind = [t for t in turns if t["kind"] == kind]
            by_kind[kind] = {
                "typing_s": _mean([t["typing_s"] for t in of_kind if "typing_s" in t]),
                "reading_s": _mean([t["reading_s"] for t in of_kind if "reading_s" in t]),
                "response_s": _mean([t["response_ms"] / 1000 for t in of_kind]),
            }
        per_mode[mode] = ModeLatency(
            response_ms=describe([t["response_ms"] for t in turns]),
            talker_ms=describe([t["talker_ms"] for t in turns]),
            background_s=describe(
                [t["background_s"] for t in later if t.get("background_s") is not None]
            ),
            gaps=len(later),
            background_within_gap=_mean([1.0 if t["background_done"] else 0.0 for t in later]),
            fresh_share=_mean([1.0 if f else 0.0 for f in fresh]) if fresh else None,
            queue_lengths=dict(sorted(queues.items(), key=lambda kv: int(kv[0]))),
            queue_mean=_mean([float(t["queue"]) for t in later]),
            queue_max=max((int(t["queue"]) for t in later), default=0),
            time_breakdown=breakdown,
            by_kind=by_kind,
        )
    base = per_mode.get("baseline")
    overhead = {
        m: (
            None
            if base is None or base.response_ms.mean is None or v.response_ms.mean is None
            else v.response_ms.mean - base.response_ms.mean
        )
        for m, v in per_mode.items()
    }
    return LatencyTables(
        modes=list(options.modes),
        per_mode=per_mode,
        overhead_ms=overhead,
        time_scale=options.time_scale,
    )


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def render(tables: LatencyTables) -> str:
    modes = tables.modes
    parts = [
        table(
            "Response time (respond, user-facing)",
            ["mode", "mean", "median", "p75", "p95", "min", "max", "std", "vs baseline"],
            [
                [
                    m,
                    *fmt_spread_ms(tables.per_mode[m].response_ms),
                    "-" if tables.overhead_ms[m] is None else f"{tables.overhead_ms[m]:+.0f} ms",
                ]
                for m in modes
            ],
        ),
        table(
            "Background work between turns",
            [
                "mode",
                "gaps",
                "done within gap",
                "fresh narrative",
                "queue lengths",
                "mean queue",
                "max queue",
                "background median",
            ],
            [
                [
                    m,
                    str(v.gaps),
                    _share(v.background_within_gap),
                    _share(v.fresh_share),
                    ", ".join(f"{k}: {n}" for k, n in v.queue_lengths.items()) or "-",
                    fmt_num(v.queue_mean),
                    str(v.queue_max),
                    "-" if v.background_s.median is None else f"{v.background_s.median:.2f}s",
                ]
                for m in modes
                for v in [tables.per_mode[m]]
            ],
        ),
    ]
    rows = []
    for m in modes:
        b = tables.per_mode[m].time_breakdown
        total = sum(b.values()) or 1.0
        human = b["typing"] + b["reading"] + b["thinking"]
        rows.append(
            [
                m,
                *(f"{b[k]:.1f}s ({b[k] / total:.1%})" for k in ("typing", "reading", "thinking")),
                f"{human / total:.1%}",
                f"{b['response']:.1f}s ({b['response'] / total:.1%})",
            ]
        )
    parts.append(
        table(
            f"Where conversation time goes (time scale {tables.time_scale:g})",
            ["mode", "typing", "reading", "thinking", "human share", "AI response"],
            rows,
        )
    )
    kind_rows = []
    for m in modes:
        for kind, values in tables.per_mode[m].by_kind.items():
            kind_rows.append(
                [
                    m,
                    kind,
                    *(
                        "-" if values[k] is None else f"{values[k]:.2f}s"
                        for k in ("typing_s", "reading_s", "response_s")
                    ),
                ]
            )
    parts.append(
        table(
            "Average timing by turn type",
            ["mode", "turn", "typing", "reading", "response"],
            kind_rows,
        )
    )
    return "\n".join(parts)


def plot(tables: LatencyTables, path: Path, *, title: str) -> Path:
    """Grouped bars: mean response time per turn type, one bar per mode."""
    from sonality.eval import plots

    kinds = ["introduction", "distractor", "critical"]
    return plots.bars(
        path,
        title=title,
        groups=kinds,
        series={
            m: [tables.per_mode[m].by_kind[k]["response_s"] for k in kinds] for m in tables.modes
        },
        ylabel="mean response time (s)",
    )


def estimate(units: Sequence[LatencyUnit], options: LatencyOptions, est: Estimate) -> None:
    """The calls of every conversation (curate's per-turn calls, without a judge)."""
    from sonality.eval.curate import CurateUnit, estimate_dialogue

    for unit in units:
        estimate_dialogue(
            CurateUnit(unit.case, 1, unit.mode, unit.turns, ()), options.affect, est, judge=False
        )
