"""The one migration runner, for both stores.

A store's schema is a folder of numbered files, ``migrations/neo4j/V<NNNN>__<words>.cypher``
and ``migrations/sqlite/V<NNNN>__<words>.sql`` (found through
:func:`sonality.resources.resource_dir`), each checksummed as shipped (sha256 of the file's
bytes). This module knows nothing of either database: it discovers the files, compares what
a store recorded as applied with what is available, and drives a backend's :class:`Ledger`
through the pending steps. A backend implements only ``applied()`` and ``apply(step)``.

Rules:

* Versions ascend without duplicates; file names are checked. Gaps are allowed: work done
  in parallel reserves a range of versions (issue 10's steps start at V0020), and a store
  applies whatever it has not recorded, in version order.
* A recorded step whose checksum differs from its file is refused with
  :class:`MigrationChecksumMismatch` naming the file: shipped files are never edited, a
  change is a new file. A recorded version with no file means the database was migrated by
  a newer Sonality (:class:`SchemaError`).
* Steps are applied in version order, one at a time; ``apply`` reports whether it applied
  the step or found it recorded meanwhile (another process migrating the same store).

The four SQLite files V0001-V0004 begin with an empty line: they are, byte for byte, the
scripts the earlier layout kept in Python strings, so the checksums it recorded stay valid.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal, Protocol

from sonality.errors import MigrationChecksumMismatch, SchemaError
from sonality.models import AppliedMigration, SchemaStatus

__all__ = [
    "Ledger",
    "MigrationStep",
    "Suffix",
    "check_applied",
    "discover",
    "migrate",
    "pending",
    "require_current",
    "status",
]

Suffix = Literal[".cypher", ".sql"]

_NAME_RE = re.compile(r"^V(\d{4})__([a-z0-9]+(?:_[a-z0-9]+)*)$")


@dataclass(frozen=True)
class MigrationStep:
    """One migration file, read."""

    version: int
    name: str
    """The file name without its suffix, e.g. ``V0001__constraints``."""
    suffix: Suffix
    text: str

    @property
    def file(self) -> str:
        """The file name, e.g. ``V0001__constraints.cypher``."""
        return self.name + self.suffix

    @property
    def slug(self) -> str:
        """The words of the name as written: ``personas_and_episodes``."""
        return self.name.partition("__")[2]

    @property
    def description(self) -> str:
        """The words of the name, spaced: ``personas and episodes``."""
        return self.slug.replace("_", " ")

    @cached_property
    def checksum(self) -> str:
        """sha256 of the file as shipped, hex."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def discover(directory: Path, suffix: Suffix) -> list[MigrationStep]:
    """The ``V*`` files of ``directory`` ending in ``suffix``, by version (other files are
    ignored). A malformed name or a duplicate version raises :class:`SchemaError`."""
    found: dict[int, MigrationStep] = {}
    for path in sorted(directory.glob(f"*{suffix}")):
        match = _NAME_RE.match(path.name.removesuffix(suffix))
        if not match:
            raise SchemaError(
                f"migration file names must look like V0001__description{suffix}",
                file=path.name,
            )
        version = int(match.group(1))
        if version in found:
            raise SchemaError("two migration files share a version", file=path.name)
        text = path.read_bytes().decode("utf-8")
        found[version] = MigrationStep(version, path.name.removesuffix(suffix), suffix, text)
    return [found[v] for v in sorted(found)]


def check_applied(applied: Sequence[AppliedMigration], available: Sequence[MigrationStep]) -> None:
    """Raise unless every recorded step is an available file with the same checksum."""
    by_version = {step.version: step for step in available}
    for record in applied:
        step = by_version.get(record.version)
        if step is None:
            raise SchemaError(
                "the database has a migration this Sonality does not know; upgrade Sonality",
                version=record.version,
                description=record.description,
            )
        if step.checksum != record.checksum:
            raise MigrationChecksumMismatch(
                f"migration {step.file} was edited after it was applied; "
                "restore the file and add a new migration instead",
                file=step.file,
                version=step.version,
            )


def pending(
    applied: Sequence[AppliedMigration], available: Sequence[MigrationStep]
) -> list[MigrationStep]:
    """The available steps not recorded as applied, in version order (checksums unchecked)."""
    done = {record.version for record in applied}
    return [step for step in available if step.version not in done]


def status(
    backend: str, applied: Sequence[AppliedMigration], available: Sequence[MigrationStep]
) -> SchemaStatus:
    """What ``sonality migrate --check`` reports: applied steps and pending names."""
    names = tuple(step.name for step in pending(applied, available))
    return SchemaStatus(backend=backend, applied=tuple(applied), pending=names)


def require_current(
    applied: Sequence[AppliedMigration], available: Sequence[MigrationStep]
) -> None:
    """Raise unless the schema is current: an edited or unknown step, or pending ones."""
    check_applied(applied, available)
    if pending(applied, available):
        raise SchemaError("schema is not current; run `sonality migrate`")


class Ledger(Protocol):
    """What a backend does for the runner."""

    async def applied(self) -> list[AppliedMigration]:
        """The steps recorded as applied, by version."""
        ...

    async def apply(self, step: MigrationStep) -> bool:
        """Run ``step`` and record it; False when it was recorded meanwhile (then nothing
        runs, but a recorded checksum unlike the step's still raises)."""
        ...


async def migrate(ledger: Ledger, available: Sequence[MigrationStep]) -> list[str]:
    """Apply the pending steps in version order; return the names of those applied."""
    applied = await ledger.applied()
    check_applied(applied, available)
    names: list[str] = []
    for step in pending(applied, available):
        if await ledger.apply(step):
            names.append(step.name)
    return names
