"""The migration runner shared by both stores (``sonality.storage.migrations``): file
discovery, checksums, the comparison of applied and available steps, the apply loop.
Needs no database."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sonality.errors import MigrationChecksumMismatch, SchemaError
from sonality.models import AppliedMigration
from sonality.resources import resource_dir
from sonality.storage import migrations
from sonality.storage.migrations import MigrationStep

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _recorded(step: MigrationStep, checksum: str | None = None) -> AppliedMigration:
    return AppliedMigration(
        version=step.version,
        description=step.description,
        checksum=checksum or step.checksum,
        applied_at=T0,
    )


class FakeLedger:
    """A ledger in memory: records what it applied; ``meanwhile`` versions count as
    applied by another process between the runner's read and its apply."""

    def __init__(self, recorded: list[AppliedMigration], meanwhile: frozenset[int] = frozenset()):
        self.recorded = recorded
        self.meanwhile = meanwhile
        self.ran: list[str] = []

    async def applied(self) -> list[AppliedMigration]:
        return list(self.recorded)

    async def apply(self, step: MigrationStep) -> bool:
        if step.version in self.meanwhile:
            return False
        self.ran.append(step.name)
        self.recorded.append(_recorded(step))
        return True


def test_shipped_folders_are_discovered_for_both_backends() -> None:
    """migrations/neo4j/*.cypher and migrations/sqlite/*.sql run from V0001 in ascending order
    (gaps allowed: a version is a name, not a count), checksummed as shipped."""
    for backend, suffix in (("neo4j", ".cypher"), ("sqlite", ".sql")):
        folder = resource_dir("migrations") / backend
        steps = migrations.discover(folder, suffix)
        versions = [s.version for s in steps]
        assert versions[0] == 1 and versions == sorted(set(versions))
        for step in steps:
            digest = hashlib.sha256((folder / step.file).read_bytes()).hexdigest()
            assert step.checksum == digest
            assert step.file.endswith(suffix)


def test_discover_orders_by_version_and_ignores_other_files(tmp_path: Path) -> None:
    """Files of the other suffix and non-migration files are ignored; order is by version."""
    folder = _folder(
        tmp_path,
        {
            "V0002__second_step.sql": "SELECT 2;",
            "V0001__first.sql": "SELECT 1;",
            "V0001__cypher_one.cypher": "RETURN 1",
            "README.md": "notes",
        },
    )
    steps = migrations.discover(folder, ".sql")
    assert [(s.version, s.name, s.slug, s.description) for s in steps] == [
        (1, "V0001__first", "first", "first"),
        (2, "V0002__second_step", "second_step", "second step"),
    ]


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"V1__short.sql": "SELECT 1;"}, "V0001__description.sql"),
        ({"V0001__Bad-Name.sql": "SELECT 1;"}, "V0001__description.sql"),
        ({"V0001__a.sql": "SELECT 1;", "V0001__b.sql": "SELECT 2;"}, "share a version"),
    ],
)
def test_malformed_folders_are_refused(tmp_path: Path, files: dict[str, str], problem: str) -> None:
    """Badly named files and duplicate versions raise SchemaError naming the problem."""
    with pytest.raises(SchemaError, match=problem):
        migrations.discover(_folder(tmp_path, files), ".sql")


def test_an_edited_step_is_named_by_its_file(tmp_path: Path) -> None:
    """A recorded checksum unlike the file's raises MigrationChecksumMismatch naming it."""
    [step] = migrations.discover(_folder(tmp_path, {"V0001__first.sql": "SELECT 1;"}), ".sql")
    with pytest.raises(MigrationChecksumMismatch, match=r"V0001__first\.sql") as caught:
        migrations.check_applied([_recorded(step, "0" * 64)], [step])
    assert caught.value.context == {"file": "V0001__first.sql", "version": 1}
    with pytest.raises(MigrationChecksumMismatch):
        migrations.require_current([_recorded(step, "0" * 64)], [step])


def test_an_unknown_recorded_version_asks_for_an_upgrade(tmp_path: Path) -> None:
    """A version recorded by a newer Sonality (no file) raises SchemaError."""
    [step] = migrations.discover(_folder(tmp_path, {"V0001__first.sql": "SELECT 1;"}), ".sql")
    future = AppliedMigration(version=9, description="future", checksum="x", applied_at=T0)
    with pytest.raises(SchemaError, match="upgrade Sonality"):
        migrations.check_applied([_recorded(step), future], [step])


def test_pending_and_status_name_what_is_missing(tmp_path: Path) -> None:
    """Pending steps are the unrecorded ones in order; the schema is current without them."""
    folder = _folder(tmp_path, {f"V000{i}__s{i}.sql": f"SELECT {i};" for i in (1, 2, 3)})
    steps = migrations.discover(folder, ".sql")
    done = [_recorded(steps[1])]
    assert [s.name for s in migrations.pending(done, steps)] == ["V0001__s1", "V0003__s3"]
    status = migrations.status("sqlite", done, steps)
    assert (status.backend, status.pending, status.current) == (
        "sqlite",
        ("V0001__s1", "V0003__s3"),
        False,
    )
    with pytest.raises(SchemaError, match="sonality migrate"):
        migrations.require_current(done, steps)
    migrations.require_current([_recorded(s) for s in steps], steps)


async def test_migrate_applies_pending_steps_in_order(tmp_path: Path) -> None:
    """The runner applies only pending steps, by version, and returns those it applied;
    a step another process recorded meanwhile is not listed."""
    folder = _folder(tmp_path, {f"V000{i}__s{i}.sql": f"SELECT {i};" for i in (1, 2, 3, 4)})
    steps = migrations.discover(folder, ".sql")
    ledger = FakeLedger([_recorded(steps[0])], meanwhile=frozenset({3}))
    assert await migrations.migrate(ledger, steps) == ["V0002__s2", "V0004__s4"]
    assert ledger.ran == ["V0002__s2", "V0004__s4"]
    everything = FakeLedger([*ledger.recorded, _recorded(steps[2])])
    assert await migrations.migrate(everything, steps) == []


async def test_migrate_refuses_an_edited_step_before_applying_anything(tmp_path: Path) -> None:
    """With an edited applied step, nothing pending runs."""
    folder = _folder(tmp_path, {"V0001__a.sql": "SELECT 1;", "V0002__b.sql": "SELECT 2;"})
    steps = migrations.discover(folder, ".sql")
    ledger = FakeLedger([_recorded(steps[0], "f" * 64)])
    with pytest.raises(MigrationChecksumMismatch):
        await migrations.migrate(ledger, steps)
    assert ledger.ran == []
