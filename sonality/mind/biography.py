"""The persona's biographical memory (seed 002's biographical knowledge): entries of its own
past, written once, recalled by meaning and importance alone.

How entries come in: only by the operator or the application, never by the model on its
own. ``create_persona(biography=…)`` and ``add_biography`` take backstory the operator
wrote (``authored``) and things the persona said about its own past that the application
chose to keep (``statement``). Nothing records the persona's replies by itself: most
replies are about the user, and a reply kept as the persona's past would carry the user's
words into memory that ``forget`` does not reach (a biography belongs to the persona, not
to a user). Each persona holds at most ``Limits.max_biography_entries`` entries; one that
restates a held entry (the same words, or a cosine of at least 0.95) is not stored twice.

How entries come back (:class:`BiographyRecall`): for the affect stages, keyed on their
interpretation of the message, the best :data:`RECALL_K` entries by ``0.7 × similarity +
0.3 × importance`` (``core.retrieval.rank_biography``), without recency, clipped to
:data:`RECALL_TOKENS`. The appraisal reads them, and the formulation (the Talker's answer
when the stages ran for the message) receives the same entries. The plain Talker prompt
(``talk.md``, no affect stages) does not: it keeps MIRROR's inputs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sonality.core.budget import clip_text
from sonality.core.retrieval import rank_biography
from sonality.errors import ValidationError
from sonality.mind.inputs import check_choice, check_int, check_text
from sonality.models import (
    BiographyDraft,
    BiographyEntry,
    BiographySource,
    RecalledBiography,
)
from sonality.ports import Embedder, Store

__all__ = [
    "RECALL_K",
    "RECALL_TOKENS",
    "BiographyRecall",
    "add_entry",
    "biography_text",
    "check_drafts",
    "new_entries",
]

RECALL_K = 3
"""Entries the affect stages recall at most per message."""

RECALL_TOKENS = 300
"""Tokens the recalled entries take at most in a prompt (the lowest-ranked one is clipped
first, then left out)."""


def check_drafts(
    drafts: Sequence[BiographyDraft | str], *, max_chars: int, max_entries: int
) -> list[BiographyDraft]:
    """The drafts checked at the boundary: text (non-blank, at most ``max_chars``),
    importance 1-10, a known source, at most ``max_entries`` of them."""
    if isinstance(drafts, str) or not isinstance(drafts, Sequence):
        raise ValidationError("biography must be a list", field="biography")
    if len(drafts) > max_entries:
        raise ValidationError(
            f"a persona holds at most {max_entries} biography entries",
            field="biography",
            limit=max_entries,
        )
    checked = []
    for draft in drafts:
        if isinstance(draft, str):
            draft = BiographyDraft(text=draft)
        elif not isinstance(draft, BiographyDraft):
            raise ValidationError("biography must hold text or drafts", field="biography")
        text = check_text(draft.text, field="text", limit=max_chars).strip()
        checked.append(
            BiographyDraft(
                text=text,
                importance=check_int(draft.importance, field="importance", low=1, high=10),
                source=check_choice(draft.source, BiographySource, field="source"),
            )
        )
    return checked


async def new_entries(
    persona_id: str,
    drafts: Sequence[BiographyDraft],
    *,
    embedder: Embedder,
    now: datetime,
) -> list[BiographyEntry]:
    """The entries of checked ``drafts``, embedded (one call for all): nothing is written
    when embedding fails. Entries given together are a microsecond apart, so they list in
    the order given."""
    if not drafts:
        return []
    vectors = await embedder.embed([d.text for d in drafts])
    return [
        BiographyEntry(
            id=f"bio-{uuid.uuid4().hex[:16]}",
            persona_id=persona_id,
            text=d.text,
            importance=d.importance,
            source=d.source,
            created_at=now + timedelta(microseconds=i),
            vector=tuple(vector),
        )
        for i, (d, vector) in enumerate(zip(drafts, vectors, strict=True))
    ]


async def add_entry(
    store: Store,
    embedder: Embedder,
    persona_id: str,
    text: str,
    *,
    importance: int,
    source: BiographySource | str,
    max_chars: int,
    max_entries: int,
    now: datetime,
) -> tuple[BiographyEntry, bool]:
    """Check one entry, then (for a persona that exists: ``PersonaNotFound`` before any
    embedding) embed and store it under the persona's cap; the entry, and whether it was
    written (False: a held entry says the same, and that one is returned)."""
    draft = BiographyDraft(
        text=check_text(text, field="text", limit=max_chars),
        importance=check_int(importance, field="importance", low=1, high=10),
        source=check_choice(source, BiographySource, field="source"),
    )
    drafts = check_drafts([draft], max_chars=max_chars, max_entries=1)
    await store.get_persona(persona_id)
    entries = await new_entries(persona_id, drafts, embedder=embedder, now=now)
    [(entry, written)] = await store.add_biography(persona_id, entries, cap=max_entries)
    return entry, written


def biography_text(recalled: Sequence[RecalledBiography]) -> str:
    """Recalled entries as a prompt reads them, one line each (a placeholder when none)."""
    if not recalled:
        return "- (nothing from my past comes to mind)"
    return "\n".join(f"- {r.entry.text}" for r in recalled)


class BiographyRecall:
    """Recalls the persona's past for the affect stages (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        count: Callable[[str], int],
        max_entries: int,
        k: int = RECALL_K,
        tokens: int = RECALL_TOKENS,
    ) -> None:
        self._store = store
        self._count = count
        self._max_entries = max_entries
        self.k = k
        self.tokens = tokens

    async def recall(self, persona_id: str, vector: Sequence[float]) -> list[RecalledBiography]:
        """The best ``k`` entries for ``vector`` that fit in ``tokens``, best first. The
        persona's entries are bounded (``max_entries``), so they are scored in full."""
        held = await self._store.biography(persona_id, limit=self._max_entries)
        ranked = rank_biography(held, vector, self.k)
        kept: list[RecalledBiography] = []
        left = self.tokens
        for item in ranked:
            used = self._count(item.entry.text)
            if used > left:
                if left >= 20:  # a clipped entry still says something; a stub would not
                    text = clip_text(item.entry.text, left, self._count)
                    entry = item.entry.model_copy(update={"text": text})
                    kept.append(item.model_copy(update={"entry": entry}))
                break
            kept.append(item)
            left -= used
        return kept
