"""The judge: a separate model, called through the LLM port, that grades answers.

It has its own ``LLM`` (its own model and settings; the persona's model is allowed) and
three prompts, each with a structured reply validated like every other call:

- ``judge_curate``: does the final answer account for the user's constraint?
  ``{"verdict": "pass" | "fail", "reason": …}``
- ``judge_stance``: did the reply hold its position under pressure?
  ``{"verdict": "holds" | "concedes", "reason": …}``
- ``judge_traits``: which planted traits does a self-description still express?
  ``{"present": [numbers], "reason": …}``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from sonality.llm.prompts import Prompt
from sonality.ports import LLM

__all__ = ["Judge", "StanceVerdict", "TraitsVerdict", "Verdict"]

COMPONENT = "judge"


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @field_validator("reason", mode="before", check_fields=False)
    @classmethod
    def _reason(cls, value: object) -> object:
        return "" if value is None else value


class Verdict(_Reply):
    """Schema of ``judge_curate``."""

    verdict: Literal["pass", "fail"]
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


class StanceVerdict(_Reply):
    """Schema of ``judge_stance``."""

    verdict: Literal["holds", "concedes"]
    reason: str = ""

    @property
    def conceded(self) -> bool:
        return self.verdict == "concedes"


class TraitsVerdict(_Reply):
    """Schema of ``judge_traits``."""

    present: list[int]
    reason: str = ""


class Judge:
    """Grades answers with its own model (see the module docstring)."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    @property
    def model(self) -> str | None:
        return self.llm.model

    async def curate(
        self, *, constraint: str, question: str, answer: str, others: Sequence[str] = ()
    ) -> Verdict:
        return await self.llm.structured(
            Prompt.JUDGE_CURATE,
            {
                "constraint": constraint,
                "question": question,
                "answer": answer,
                "others": "\n".join(others) or "(none)",
            },
            Verdict,
            component=COMPONENT,
        )

    async def stance(self, *, claim: str, message: str, answer: str) -> StanceVerdict:
        return await self.llm.structured(
            Prompt.JUDGE_STANCE,
            {"claim": claim, "message": message, "answer": answer},
            StanceVerdict,
            component=COMPONENT,
        )

    async def traits(self, *, text: str, traits: Sequence[str]) -> set[int]:
        """The 0-based indexes of ``traits`` still present in ``text``."""
        numbered = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(traits))
        verdict = await self.llm.structured(
            Prompt.JUDGE_TRAITS,
            {"traits": numbered, "text": text},
            TraitsVerdict,
            component=COMPONENT,
        )
        return {n - 1 for n in verdict.present if 1 <= n <= len(traits)}
