"""``sonality eval retention``: the Broken Telephone, measured.

A persona starts with distinctive traits planted in its first snapshot. A user then has N
interactions with it (``record``, memory-backend mode: the script's messages with a fixed
acknowledgement as the agent's response): disclosures of safety facts first, then
evidence that forms beliefs, interleaved with small talk. Reflections go through the real
``reflect`` path, in two arms:

- ``triggered``: reflect whenever the deterministic triggers say a reflection is due (the
  production policy: cooldown, periodic, event);
- ``every``: force a reflection after every interaction — the worst case a per-turn
  rewrite policy would produce (N interactions, N rewrites).

After every reflection: which planted traits the snapshot still expresses (the judge, or
a case-insensitive match of each trait's key phrase with ``match="string"``), how many
of the user's facts the context for a probe message still carries, how many beliefs are
still active out of all that formed, and the snapshot's vocabulary diversity (unique word
ratio; < 0.4 warns of collapse). The seed's arithmetic predicts survival p^N after N
rewrites; the table reports the per-rewrite survival observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sonality.eval.curate import CONVERSATION_ID, USER_ID, persona_id_for
from sonality.eval.datasets import RetentionData, RetentionScript
from sonality.eval.estimate import Estimate, tokens
from sonality.eval.judge import Judge
from sonality.eval.tables import fmt_num, table

__all__ = [
    "ACKNOWLEDGEMENT",
    "RetentionOptions",
    "RetentionTables",
    "RetentionUnit",
    "build_units",
    "compute_tables",
    "estimate",
    "first_snapshot",
    "messages",
    "plot",
    "render",
    "run_arm",
]

ACKNOWLEDGEMENT = "Thank you, that's useful. I'll keep it in mind."
Arm = Literal["triggered", "every"]


class RetentionOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    arms: tuple[Arm, ...] = ("triggered", "every")
    interactions: int = Field(default=100, ge=1, le=10_000)
    match: Literal["judge", "string"] = "judge"
    seed: int = 0


@dataclass(frozen=True)
class RetentionUnit:
    script: RetentionScript
    arm: str

    @property
    def key(self) -> str:
        return self.arm


def build_units(data: RetentionData, options: RetentionOptions) -> list[RetentionUnit]:
    return [RetentionUnit(data.script, arm) for arm in options.arms]


def first_snapshot(script: RetentionScript) -> str:
    """The persona's first self-description: its identity and every planted trait."""
    return " ".join([script.persona.core_identity, *(t.text for t in script.traits)])


def messages(script: RetentionScript, n: int) -> list[str]:
    """The user's N messages: the fact disclosures first, then belief evidence and small
    talk taking turns, cycling through the script."""
    evidence = [m for b in script.beliefs for m in b.messages]
    mixed: list[str] = []
    for i in range(max(len(evidence), len(script.filler))):
        if i < len(evidence):
            mixed.append(evidence[i])
        if i < len(script.filler):
            mixed.append(script.filler[i])
    out = [f.text for f in script.facts]
    while len(out) < n:
        out.extend(mixed)
    return out[:n]


def _unique_ratio(text: str) -> float | None:
    words = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
    words = [w for w in words if w]
    return len(set(words)) / len(words) if words else None


async def run_arm(
    app: Any, judge: Judge, unit: RetentionUnit, options: RetentionOptions
) -> dict[str, Any]:
    """Drive one arm (see the module docstring)."""
    script = unit.script
    persona_id = persona_id_for(f"retention|{unit.key}", "retention")
    await app.create_persona(
        persona_id,
        name=script.persona.name,
        core_identity=script.persona.core_identity,
        snapshot=first_snapshot(script),
    )
    traits = [t.text for t in script.traits]
    ever: set[str] = set()
    checkpoints: list[dict[str, Any]] = []
    attempted = committed = reflection_calls = 0

    async def measure(interaction: int, outcome: str) -> None:
        snapshot = (await app.snapshot(persona_id)).text
        if options.match == "string":
            present = {i for i, t in enumerate(script.traits) if t.key.lower() in snapshot.lower()}
        else:
            present = await judge.traits(text=snapshot, traits=traits)
        context = await app.context(persona_id, user_id=USER_ID, message=script.probe)
        prompt = context.as_prompt().lower()
        facts = [f for f in script.facts if f.key.lower() in prompt]
        active = {b.topic for b in await app.beliefs(persona_id)}
        ever.update(active)
        checkpoints.append(
            {
                "interaction": interaction,
                "reflection": attempted,
                "outcome": outcome,
                "rewrites": committed,
                "traits_present": sorted(script.traits[i].id for i in present),
                "traits_share": len(present) / len(script.traits),
                "facts_share": len(facts) / len(script.facts) if script.facts else None,
                "beliefs_active": len(active),
                "beliefs_ever": len(ever),
                "unique_ratio": _unique_ratio(snapshot),
                "snapshot_chars": len(snapshot),
            }
        )

    await measure(0, "start")
    for index, message in enumerate(messages(script, options.interactions), start=1):
        await app.record(
            persona_id,
            user_id=USER_ID,
            conversation_id=CONVERSATION_ID,
            message=message,
            response=ACKNOWLEDGEMENT,
        )
        if unit.arm == "every":
            report = await app.reflect(persona_id, force=True)
        elif (await app.reflection_due(persona_id)).due:
            report = await app.reflect(persona_id)
        else:
            continue
        if report.outcome == "skipped":
            continue
        attempted += 1
        committed += report.outcome == "committed"
        reflection_calls += report.llm_calls
        await measure(index, str(report.outcome))
    last = checkpoints[-1]
    return {
        "arm": unit.arm,
        "persona_id": persona_id,
        "interactions": options.interactions,
        "reflections": attempted,
        "rewrites": committed,
        "rewrites_per_100": 100 * committed / options.interactions,
        "traits_final": last["traits_share"],
        "facts_disclosed_by": len(script.facts),
        "facts_final": last["facts_share"],
        "checkpoints": checkpoints,
        "usage": {
            "calls": 2 * options.interactions + reflection_calls,
            "by_component": {
                "enrichment": 2 * options.interactions,
                "reflection": reflection_calls,
            },
        },
    }


# tables ---------------------------------------------------------------------------------


class ArmRetention(BaseModel):
    model_config = ConfigDict(frozen=True)

    interactions: int
    reflections: int
    rewrites: int
    rewrites_per_100: float
    traits_final: float
    traits_min: float
    per_rewrite_survival: float | None
    """The p in p^N that matches the final trait share after N rewrites."""
    facts_min: float | None
    """The lowest share of the user's facts in the context once all were disclosed."""
    beliefs_active_final: int
    beliefs_ever: int
    unique_ratio_min: float | None
    unique_ratio_final: float | None
    curve: list[tuple[int, float]]
    """(rewrites so far, trait share) after each reflection, from the start."""
    diversity: list[tuple[int, float | None]]
    """(rewrites so far, unique word ratio of the snapshot) after each reflection."""


class RetentionTables(BaseModel):
    model_config = ConfigDict(frozen=True)

    arms: list[str]
    per_arm: dict[str, ArmRetention]


def compute_tables(
    records: Sequence[Mapping[str, Any]], options: RetentionOptions
) -> RetentionTables:
    per_arm: dict[str, ArmRetention] = {}
    for record in records:
        points = record["checkpoints"]
        final = points[-1]
        rewrites = int(record["rewrites"])
        survival = None
        if rewrites > 0 and final["traits_share"] > 0:
            survival = final["traits_share"] ** (1 / rewrites)
        elif rewrites > 0:
            survival = 0.0
        disclosed = int(record.get("facts_disclosed_by", 0))
        facts = [
            p["facts_share"]
            for p in points
            if p["facts_share"] is not None and p["interaction"] >= disclosed
        ]
        ratios = [p["unique_ratio"] for p in points if p["unique_ratio"] is not None]
        per_arm[record["arm"]] = ArmRetention(
            interactions=int(record["interactions"]),
            reflections=int(record["reflections"]),
            rewrites=rewrites,
            rewrites_per_100=float(record["rewrites_per_100"]),
            traits_final=float(final["traits_share"]),
            traits_min=min(float(p["traits_share"]) for p in points),
            per_rewrite_survival=survival,
            facts_min=min(facts) if facts else None,
            beliefs_active_final=int(final["beliefs_active"]),
            beliefs_ever=int(final["beliefs_ever"]),
            unique_ratio_min=min(ratios) if ratios else None,
            unique_ratio_final=ratios[-1] if ratios else None,
            curve=[(int(p["rewrites"]), float(p["traits_share"])) for p in points],
            diversity=[(int(p["rewrites"]), p["unique_ratio"]) for p in points],
        )
    arms = [a for a in options.arms if a in per_arm]
    return RetentionTables(arms=arms, per_arm=per_arm)


def render(tables: RetentionTables) -> str:
    rows = []
    for arm in tables.arms:
        v = tables.per_arm[arm]
        rows.append(
            [
                arm,
                str(v.interactions),
                str(v.reflections),
                str(v.rewrites),
                f"{v.rewrites_per_100:.1f}",
                f"{v.traits_final:.0%}",
                fmt_num(v.per_rewrite_survival, 3),
                "-" if v.facts_min is None else f"{v.facts_min:.0%}",
                f"{v.beliefs_active_final}/{v.beliefs_ever}",
                f"{fmt_num(v.unique_ratio_final)} (min {fmt_num(v.unique_ratio_min)})",
            ]
        )
    parts = [
        table(
            "Retention across reflections",
            [
                "arm",
                "interactions",
                "reflections",
                "rewrites",
                "rewrites/100",
                "traits kept",
                "per-rewrite p",
                "facts in context (min)",
                "beliefs active/formed",
                "unique ratio",
            ],
            rows,
        )
    ]
    marks = (1, 5, 10, 20, 40, 100)
    curve_rows = []
    for arm in tables.arms:
        curve = dict(tables.per_arm[arm].curve)
        cells = []
        for mark in marks:
            upto = [share for rewrites, share in curve.items() if rewrites <= mark]
            reached = any(rewrites >= mark for rewrites in curve)
            cells.append(f"{upto[-1]:.0%}" if upto and reached else "-")
        curve_rows.append([arm, *cells])
    parts.append(
        table(
            "Traits kept after N rewrites (p^N predicts 0.95^40 = 13% for 40 rewrites)",
            ["arm", *(f"N={m}" for m in marks)],
            curve_rows,
        )
    )
    return "\n".join(parts)


def plot(tables: RetentionTables, path: Path, *, title: str) -> Path:
    """Trait share and the snapshot's unique word ratio over rewrites, per arm."""
    from sonality.eval import plots

    x: dict[str, list[float]] = {}
    series: dict[str, list[float | None]] = {}
    for arm in tables.arms:
        v = tables.per_arm[arm]
        x[f"{arm}: traits kept"] = [float(r) for r, _ in v.curve]
        series[f"{arm}: traits kept"] = [share for _, share in v.curve]
        x[f"{arm}: unique word ratio"] = [float(r) for r, _ in v.diversity]
        series[f"{arm}: unique word ratio"] = [ratio for _, ratio in v.diversity]
    return plots.lines(
        path,
        title=title,
        x=x,
        series=series,
        xlabel="snapshot rewrites",
        ylabel="share",
        ylim=(0.0, 1.05),
    )


def estimate(
    units: Sequence[RetentionUnit],
    options: RetentionOptions,
    est: Estimate,
    *,
    reflection_every: int = 20,
) -> None:
    """Two enrichment calls per interaction, one call per reflection (every interaction
    in the ``every`` arm, about one per ``reflection_every`` in ``triggered``), and one
    judge call per reflection with ``match="judge"``."""
    for unit in units:
        arm = unit.arm
        est.unit(arm)
        snapshot = tokens(first_snapshot(unit.script))
        for message in messages(unit.script, options.interactions):
            est.call(arm, "assess_evidence", tokens(message))
            est.call(arm, "extract_insight", 40 + tokens(message) + tokens(ACKNOWLEDGEMENT))
        count = (
            options.interactions
            if arm == "every"
            else options.interactions // max(reflection_every, 1)
        )
        for _ in range(count):
            est.call(arm, "reflect", snapshot + 600)
            if options.match == "judge":
                est.call("judge", "judge_traits", snapshot + 200)
        if options.match == "judge":
            est.unit("judge")
