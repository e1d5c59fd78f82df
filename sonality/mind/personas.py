"""A persona's own set-up: making one (its checked self-model, first snapshot and
biography) and seeding its affect towards a user. The facade checks ids and delegates
here."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sonality.errors import ValidationError
from sonality.mind.inputs import check_choice, check_id, check_text
from sonality.mind.parts import Limits
from sonality.models import (
    AffectPlacement,
    AffectState,
    BiographyDraft,
    HardGoal,
    Persona,
    RuntimeMode,
    SelfModel,
    Snapshot,
    SoftGoal,
)
from sonality.ports import Embedder, Store

__all__ = ["SELF_MODEL_ITEMS", "create_persona", "new_persona", "set_affect", "set_runtime"]

SELF_MODEL_ITEMS = 20
"""Items each list of a self-model (traits, values, goals) holds at most."""


def _check_self_model(model: SelfModel, limit: int) -> SelfModel:
    """Each list of the self-model: at most 20 non-blank items of at most ``limit``
    characters, stripped."""
    checked: dict[str, tuple[str, ...]] = {}
    for name in ("traits", "values", "goals"):
        items = tuple(getattr(model, name))
        if len(items) > SELF_MODEL_ITEMS:
            raise ValidationError(f"a self-model has at most {SELF_MODEL_ITEMS} {name}", field=name)
        checked[name] = tuple(check_text(item, field=name, limit=limit).strip() for item in items)
    return SelfModel(**checked)


def new_persona(
    persona_id: str,
    *,
    name: str,
    core_identity: str,
    snapshot: str | None,
    self_model: SelfModel | None,
    limits: Limits,
    now: datetime,
) -> tuple[Persona, Snapshot]:
    """A new persona (a fresh incarnation) and its first snapshot, ``snapshot`` or the core
    identity; every argument checked against ``limits`` first."""
    check_id(persona_id, "persona_id")
    check_text(name, field="name", limit=limits.max_name_chars)
    check_text(core_identity, field="core_identity", limit=limits.max_identity_chars)
    if snapshot is not None:
        check_text(snapshot, field="snapshot", limit=limits.max_identity_chars)
    if self_model is not None and not isinstance(self_model, SelfModel):
        raise ValidationError("self_model must be a SelfModel", field="self_model")
    persona = Persona(
        id=persona_id,
        name=name,
        core_identity=core_identity,
        created_at=now,
        self_model=_check_self_model(self_model or SelfModel(), limits.max_name_chars),
        incarnation=uuid.uuid4().hex,
    )
    first = Snapshot(
        persona_id=persona_id, version=1, text=snapshot or core_identity, created_at=now
    )
    return persona, first


async def create_persona(
    store: Store,
    embedder: Embedder,
    persona_id: str,
    *,
    name: str,
    core_identity: str,
    snapshot: str | None,
    self_model: SelfModel | None,
    biography: Sequence[BiographyDraft | str],
    limits: Limits,
    now: datetime,
) -> Persona:
    """Check everything, embed the biography (one call), then write the persona, its first
    snapshot and its biography in one transaction: a failure writes nothing."""
    from sonality.mind.biography import check_drafts, new_entries

    drafts = check_drafts(
        biography, max_chars=limits.max_biography_chars, max_entries=limits.max_biography_entries
    )
    persona, first = new_persona(
        persona_id,
        name=name,
        core_identity=core_identity,
        snapshot=snapshot,
        self_model=self_model,
        limits=limits,
        now=now,
    )
    entries = await new_entries(persona_id, drafts, embedder=embedder, now=now)
    return await store.create_persona(persona, first, entries)


def _check_goals(field: str, goals: Sequence[HardGoal | SoftGoal | str] | None, limit: int) -> None:
    if goals is None:
        return
    if isinstance(goals, str) or not isinstance(goals, Sequence):
        raise ValidationError(f"{field} must be a list", field=field)
    for goal in goals:
        if isinstance(goal, str):
            check_text(goal, field=field, limit=limit)
        elif not isinstance(goal, HardGoal | SoftGoal):
            raise ValidationError(f"{field} must hold text or goals", field=field)


async def set_affect(
    store: Store,
    persona_id: str,
    user_id: str,
    *,
    now: datetime,
    limit: int,
    emotional_state: str | None = None,
    relationship: str | None = None,
    hard_goals: Sequence[HardGoal | str] | None = None,
    soft_goals: Sequence[SoftGoal | str] | None = None,
) -> AffectState:
    """Seed or change the persona's affect state towards the user (mood, relationship,
    goals; each text at most ``limit`` characters), stored as the next version."""
    from sonality.mind.affect import configure, initial_state

    for field, text in (("emotional_state", emotional_state), ("relationship", relationship)):
        if text is not None:
            check_text(text, field=field, limit=limit)
    _check_goals("hard_goals", hard_goals, limit)
    _check_goals("soft_goals", soft_goals, limit)
    current = await store.get_affect(persona_id, user_id)
    state = configure(
        current or initial_state(persona_id, user_id, now),
        now=now,
        emotional_state=emotional_state,
        relationship=relationship,
        hard_goals=hard_goals,
        soft_goals=soft_goals,
    )
    return await store.put_affect(state)


async def set_runtime(
    store: Store,
    persona_id: str,
    mode: RuntimeMode | str | None,
    affect: AffectPlacement | str | None,
) -> Persona:
    """Set the persona's default runtime mode and affect placement (None keeps one)."""
    current = await store.get_persona(persona_id)
    run_mode = (
        current.runtime_mode if mode is None else check_choice(mode, RuntimeMode, field="mode")
    )
    placement = (
        current.affect if affect is None else check_choice(affect, AffectPlacement, field="affect")
    )
    return await store.set_persona_runtime(persona_id, runtime_mode=run_mode, affect=placement)
