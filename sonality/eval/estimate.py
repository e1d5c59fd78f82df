"""Dry-run estimates: how many model calls a run makes, how many tokens, what it costs.

Nothing is sent to a model. Input tokens are counted on the real prompt templates plus
the run's own texts (messages, questions); what a model would write is not known, so
outputs (and the inputs that contain earlier outputs) use the typical sizes in
:data:`OUTPUT_TOKENS`. Prices come from litellm's cost map (``sonality.llm.pricing``);
a model it does not know is reported as unpriced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from sonality.eval.tables import table

__all__ = ["OUTPUT_TOKENS", "Estimate", "EstimateRow", "prompt_tokens", "tokens"]

OUTPUT_TOKENS: Mapping[str, int] = {
    "bare": 180,
    "talk": 180,
    "monologue": 220,
    "controller": 380,
    "assess_evidence": 140,
    "extract_insight": 30,
    "affect_update": 160,
    "affect_appraise": 90,
    "affect_plan": 40,
    "reflect": 500,
    "judge_curate": 50,
    "judge_stance": 50,
    "judge_traits": 40,
}
"""Assumed reply sizes, in tokens, per prompt."""

COMPONENT_OF: Mapping[str, str] = {
    "bare": "talker",
    "talk": "talker",
    "monologue": "monologue",
    "controller": "controller",
    "assess_evidence": "enrichment",
    "extract_insight": "enrichment",
    "affect_update": "affect",
    "affect_appraise": "affect",
    "affect_plan": "affect",
    "reflect": "reflection",
    "judge_curate": "judge",
    "judge_stance": "judge",
    "judge_traits": "judge",
}


def tokens(text: str) -> int:
    """An estimate of ``text``'s tokens (four characters a token, rounded up)."""
    return (len(text) + 3) // 4


@cache
def prompt_tokens(name: str) -> int:
    """Tokens of prompt ``name``'s fixed text (placeholders removed)."""
    from sonality.llm.prompts import PromptLibrary

    return tokens(PromptLibrary().fixed_text(name))


class EstimateRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    group: str
    """A mode, a phase or ``judge``."""
    units: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    by_component: dict[str, int]
    """Calls per component."""


@dataclass
class _Acc:
    units: int = 0
    calls: dict[str, int] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0


class Estimate:
    """Accumulates calls per group; :meth:`rows` prices them."""

    def __init__(self, *, model: str | None, judge: str | None) -> None:
        self.model = model
        self.judge = judge
        self._groups: dict[str, _Acc] = {}

    def unit(self, group: str) -> None:
        self._groups.setdefault(group, _Acc()).units += 1

    def call(self, group: str, prompt: str, variable_tokens: int) -> None:
        """One call of ``prompt`` with ``variable_tokens`` of filled-in text."""
        acc = self._groups.setdefault(group, _Acc())
        component = COMPONENT_OF.get(prompt, prompt)
        acc.calls[component] = acc.calls.get(component, 0) + 1
        acc.input_tokens += prompt_tokens(prompt) + variable_tokens
        acc.output_tokens += OUTPUT_TOKENS.get(prompt, 100)

    def rows(self, price: Callable[[str | None, int, int], float | None]) -> list[EstimateRow]:
        rows = []
        for group, acc in self._groups.items():
            model = self.judge if group == "judge" else self.model
            rows.append(
                EstimateRow(
                    group=group,
                    units=acc.units,
                    calls=sum(acc.calls.values()),
                    input_tokens=acc.input_tokens,
                    output_tokens=acc.output_tokens,
                    cost_usd=price(model, acc.input_tokens, acc.output_tokens),
                    by_component=dict(sorted(acc.calls.items())),
                )
            )
        return rows

    def report(self, price: Callable[[str | None, int, int], float | None]) -> dict[str, Any]:
        rows = self.rows(price)
        costs = [r.cost_usd for r in rows]
        return {
            "model": self.model,
            "judge": self.judge,
            "rows": [r.model_dump() for r in rows],
            "total": {
                "calls": sum(r.calls for r in rows),
                "input_tokens": sum(r.input_tokens for r in rows),
                "output_tokens": sum(r.output_tokens for r in rows),
                "cost_usd": None if any(c is None for c in costs) else sum(c or 0 for c in costs),
            },
        }


def render(report: Mapping[str, Any], title: str) -> str:
    """The dry-run table."""

    def cost(value: float | None) -> str:
        return "unpriced" if value is None else f"${value:,.2f}"

    rows = [
        [
            r["group"],
            str(r["units"]),
            str(r["calls"]),
            ", ".join(f"{k} {v}" for k, v in r["by_component"].items()),
            f"{r['input_tokens']:,}",
            f"{r['output_tokens']:,}",
            cost(r["cost_usd"]),
        ]
        for r in report["rows"]
    ]
    total = report["total"]
    rows.append(
        [
            "total",
            "",
            str(total["calls"]),
            "",
            f"{total['input_tokens']:,}",
            f"{total['output_tokens']:,}",
            cost(total["cost_usd"]),
        ]
    )
    return table(
        f"{title} — dry run (model {report['model'] or '-'}, judge {report['judge'] or '-'}; "
        "nothing was sent)",
        ["group", "units", "calls", "calls by component", "input tokens", "output tokens", "cost"],
        rows,
    )
