"""Defences against pressure and repetition that do not depend on the model being wise.

The model scores each message as evidence, but a model can be talked into scoring a pushy
message high. These rules bound what any one user can do, whatever the scores say:

1. **Pressure carries no evidence.** A message whose reasoning type is social pressure
   (insistence, demands, shaming) or an appeal to popularity stages nothing
   (:data:`PRESSURE_TYPES`; ``opinion.stage`` applies it).
2. **A repeated claim is not new evidence.** When the same user already moved a topic
   with a near-identical message within the influence window, the repeat stages nothing
   on that topic. Messages are compared as normalised text (:func:`claim_key`: Unicode
   NFKC, case-folded, words only) by the Jaccard overlap of their word trigrams
   (:func:`claim_similarity`); at ``repeat_similarity`` (0.9) or more they are one claim.
3. **Each user has an influence budget per topic.** The staged deltas one user's
   episodes put on one topic within the last ``influence_window`` interactions sum (in
   absolute value) to at most ``user_influence_budget``; a delta that would pass it is
   cut to what is left, or dropped.

A fourth rule, the cap on a topic's net move over any window of ``influence_window``
interactions, belongs to committing and lives in ``opinion.commit_due``.

Pure functions over the data the pipeline reads (``UserInfluence`` rows: the user's
staged deltas in the window with their messages); nothing here does I/O.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence

from sonality.models import ReasoningType, StagedUpdate, UserInfluence

__all__ = [
    "PRESSURE_TYPES",
    "claim_key",
    "claim_similarity",
    "is_pressure",
    "is_repeat",
    "limit_influence",
]

PRESSURE_TYPES = frozenset({ReasoningType.SOCIAL_PRESSURE, ReasoningType.APPEAL_TO_POPULARITY})
"""Reasoning types that are not reasons: their evidence has zero magnitude."""

_WORDS = re.compile(r"\w+")
_SHINGLE = 3
_EPSILON = 1e-9
"""A budget left smaller than this is spent (floating-point dust is not influence)."""


def is_pressure(reasoning_type: ReasoningType) -> bool:
    """True for reasoning that moves no belief, however it is scored."""
    return reasoning_type in PRESSURE_TYPES


def claim_key(text: str) -> str:
    """The message as a claim: NFKC-normalised, case-folded words joined by one space
    (punctuation, emphasis and spacing do not make a claim new)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_WORDS.findall(folded))


def _shingles(key: str) -> frozenset[str]:
    words = key.split()
    if len(words) <= _SHINGLE:
        return frozenset({key})
    return frozenset(" ".join(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1))


def _claim(text: str) -> tuple[str, frozenset[str]]:
    """A message's claim key and its word trigrams, worked out once per message."""
    key = claim_key(text)
    return key, _shingles(key)


def _overlap(a: tuple[str, frozenset[str]], b: tuple[str, frozenset[str]]) -> float:
    if a[0] == b[0]:
        return 1.0
    union = a[1] | b[1]
    return len(a[1] & b[1]) / len(union) if union else 0.0


def claim_similarity(a: str, b: str) -> float:
    """How much two messages are the same claim, in [0, 1]: 1 when their claim keys are
    equal, else the Jaccard overlap of their word trigrams."""
    return _overlap(_claim(a), _claim(b))


def is_repeat(message: str, earlier: Iterable[str], threshold: float) -> bool:
    """True when ``message`` is near-identical (similarity ≥ ``threshold``) to any of
    ``earlier``."""
    mine = _claim(message)
    return any(_overlap(mine, _claim(other)) >= threshold for other in earlier)


def limit_influence(
    staged: Sequence[StagedUpdate],
    *,
    message: str,
    influence: Sequence[UserInfluence],
    index: int,
    window: int,
    budget: float,
    repeat_similarity: float,
) -> tuple[StagedUpdate, ...]:
    """The staged deltas of one interaction (index ``index``) after rules 2 and 3 of the
    module docstring. ``influence`` is what the same user staged before (rows outside
    the window, ``staged_at <= index - window``, and this episode's own rows are
    ignored). A delta is dropped when its topic was already moved by a near-identical
    message, and cut to the budget the user has left on its topic."""
    since = index - window
    earlier = [row for row in influence if since < row.staged_at < index]
    kept: list[StagedUpdate] = []
    mine = _claim(message)
    claims: dict[str, tuple[str, frozenset[str]]] = {}  # each earlier message's, once

    def repeats(other: str) -> bool:
        claim = claims.get(other)
        if claim is None:
            claim = claims[other] = _claim(other)
        return _overlap(mine, claim) >= repeat_similarity

    for item in staged:
        on_topic = [row for row in earlier if row.topic == item.topic]
        if any(repeats(row.message) for row in on_topic):
            continue
        left = budget - math.fsum(abs(row.signed_delta) for row in on_topic)
        if left <= _EPSILON:
            continue
        size = math.copysign(min(abs(item.signed_delta), left), item.signed_delta)
        kept.append(item.model_copy(update={"signed_delta": size}))
    return tuple(kept)
