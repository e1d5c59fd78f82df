"""Moving personas between stores: export as JSON lines, import, copy.

The format is ``storage/archive.py``'s (canonical, so equal data is equal text). Import is
idempotent: a persona the target already holds with exactly the archived data is left as
it is (``unchanged``); one it holds with other data is a ``ConflictError`` naming it, and
nothing of the file is written (every persona of the file is checked before the first is
imported, and each is written in one transaction). "The data" is the persona's
(``storage.archive.persona_data``): the audit records are the store's history, so a
target that deleted a persona of the same id before does not differ by its own record of
that. An imported persona is a new incarnation in the target (no API key of the target
grants it until one is made).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from sonality.errors import AlreadyExists, ConflictError, PersonaNotFound, ValidationError
from sonality.models import Imported, ImportStatus, PersonaArchive
from sonality.observability import get_logger
from sonality.ports import Store
from sonality.storage.archive import dump_lines, load_archives, persona_data

__all__ = [
    "copy_personas",
    "export_lines",
    "import_archives",
    "parse_archive",
]

log = get_logger("sonality.archive")


async def export_lines(store: Store, persona_ids: Sequence[str]) -> list[str]:
    """The personas' sections of an archive file, line by line (without newlines), in the
    order given. ``PersonaNotFound`` for an unknown persona."""
    out: list[str] = []
    for persona_id in persona_ids:
        out.extend(dump_lines(await store.export_persona(persona_id)))
    return out


async def _plan(store: Store, archives: Sequence[PersonaArchive]) -> list[bool]:
    """For each archive: True to import it, False when the store already holds it equal.
    ``ConflictError`` when the store holds one of them with other data."""
    seen: set[str] = set()
    todo = []
    for archive in archives:
        pid = archive.persona.id
        if pid in seen:
            raise ValidationError(f"persona {pid!r} appears twice in the archive")
        seen.add(pid)
        try:
            held = await store.export_persona(pid)
        except PersonaNotFound:
            todo.append(True)
            continue
        if persona_data(held) != persona_data(archive):
            raise ConflictError(
                f"persona {pid!r} already exists with other data; delete it first "
                "(sonality persona delete) to replace it",
                persona_id=pid,
            )
        todo.append(False)
    return todo


async def import_archives(store: Store, archives: Sequence[PersonaArchive]) -> list[Imported]:
    """Write the archives into ``store`` (see the module docstring)."""
    results = []
    for archive, needed in zip(archives, await _plan(store, archives), strict=True):
        status = ImportStatus.UNCHANGED
        if needed:
            fresh = archive.persona.model_copy(update={"incarnation": uuid.uuid4().hex})
            try:
                await store.import_persona(archive.model_copy(update={"persona": fresh}))
                status = ImportStatus.IMPORTED
            except AlreadyExists:  # created meanwhile: equal is fine, other data is not
                await _plan(store, [archive])
        log.info("persona_imported", persona_id=archive.persona.id, status=status.value)
        results.append(
            Imported(
                persona_id=archive.persona.id,
                status=status,
                episodes=len(archive.episodes),
                beliefs=len(archive.beliefs),
            )
        )
    return results


def parse_archive(lines: Iterable[str]) -> list[PersonaArchive]:
    """An archive file's personas (``ValidationError`` naming the first bad line)."""
    return load_archives(lines)


async def copy_personas(
    source: Store, target: Store, persona_ids: Sequence[str] | None = None
) -> list[Imported]:
    """Copy the personas (all of the source's when None) from ``source`` into ``target``,
    as export then import would, without a file."""
    ids = (
        list(persona_ids)
        if persona_ids is not None
        else [p.id for p in await source.list_personas()]
    )
    archives = [await source.export_persona(pid) for pid in ids]
    return await import_archives(target, archives)
