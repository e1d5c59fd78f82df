"""Snapshot validation: the guard between an LLM rewrite and the persona's identity.

A reflection rewrites the whole first-person narrative, and one bad rewrite can erase
months of development. ``validate_snapshot`` rejects the shapes of failure that can be
seen without a model: a stub, a collapse (the new text keeps too little of the old
length), a runaway (too long, or grown too much in one go), and a dropped trait (a kept
phrase — the persona's fixed traits and values — that the old text said and the new one
does not: PRESERVE, the reflection's first duty, checked rather than hoped for). Lengths
are counted in characters after stripping surrounding whitespace; phrases are compared by
their words, case-folded.

``word_diff`` shows what a rewrite changed, word by word, for the CLI.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from sonality.models import Frozen

__all__ = [
    "SnapshotRejection",
    "SnapshotVerdict",
    "validate_snapshot",
]


class SnapshotRejection(StrEnum):
    """Why a new snapshot was refused (stored on the ``Reflection`` node)."""

    TOO_SHORT = "too_short"
    SHRUNK = "shrunk"
    TOO_LONG = "too_long"
    GREW_TOO_MUCH = "grew_too_much"
    DROPPED_TRAIT = "dropped_trait"


class SnapshotVerdict(Frozen):
    ok: bool
    reason: SnapshotRejection | None = None
    """``None`` when ``ok``; a ``SnapshotRejection`` (a ``str``) otherwise."""
    detail: str | None = None
    """The numbers behind a rejection, for logs and the CLI."""
    retention_ratio: float
    """``len(new) / len(old)``; 1.0 when there was no old text to retain."""


def validate_snapshot(
    old: str,
    new: str,
    *,
    min_chars: int = 30,
    min_retention: float = 0.6,
    max_growth: float = 3.0,
    max_chars: int = 8_000,
    kept: Sequence[str] = (),
) -> SnapshotVerdict:
    """Accept or reject ``new`` as the successor of ``old``.

    Checked in order: shorter than ``min_chars`` → ``too_short``; longer than
    ``max_chars`` → ``too_long``; ``len(new) / len(old) < min_retention`` → ``shrunk``
    (for any non-empty ``old``, as the seed states it); ratio above ``max_growth`` →
    ``grew_too_much``, only when ``old`` is at least ``min_chars`` long (a placeholder
    seed snapshot may grow freely); a phrase of ``kept`` that ``old`` contains and
    ``new`` does not → ``dropped_trait``.
    """
    old_len = len(old.strip())
    new_len = len(new.strip())
    ratio = new_len / old_len if old_len else 1.0
    old_is_real = old_len >= min_chars

    if new_len < min_chars:
        return _reject(
            SnapshotRejection.TOO_SHORT, f"{new_len} chars, need at least {min_chars}", ratio
        )
    if new_len > max_chars:
        return _reject(SnapshotRejection.TOO_LONG, f"{new_len} chars, limit {max_chars}", ratio)
    if old_len and ratio < min_retention:
        return _reject(
            SnapshotRejection.SHRUNK,
            f"kept {ratio:.2f} of the old length ({new_len}/{old_len}), need {min_retention}",
            ratio,
        )
    if old_is_real and ratio > max_growth:
        return _reject(
            SnapshotRejection.GREW_TOO_MUCH,
            f"grew {ratio:.2f}x ({new_len}/{old_len}), limit {max_growth}x",
            ratio,
        )
    old_words, new_words = _words(old), _words(new)
    dropped = [
        phrase
        for phrase in kept
        if (words := _words(phrase)).strip() and words in old_words and words not in new_words
    ]
    if dropped:
        return _reject(
            SnapshotRejection.DROPPED_TRAIT,
            "dropped " + "; ".join(repr(p) for p in dropped),
            ratio,
        )
    return SnapshotVerdict(ok=True, retention_ratio=ratio)


_WORD = re.compile(r"\w+")


def _words(text: str) -> str:
    """``text`` as its case-folded words, one space apart, padded with a space each side
    (so ``in`` matches whole words only)."""
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


def _reject(reason: SnapshotRejection, detail: str, ratio: float) -> SnapshotVerdict:
    return SnapshotVerdict(ok=False, reason=reason, detail=detail, retention_ratio=ratio)
