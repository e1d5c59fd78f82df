"""Store rules written once (``sonality.storage.checks``), checked as pure functions; the
contract suite checks them again through both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sonality.errors import ConflictError, ValidationError
from sonality.storage import checks

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    "values",
    [
        (1.0, float("nan")),
        (float("inf"), 0.0),
        (1e39, 0.0),
        (1.0,),
        (1.0, 0.0, 0.0),
    ],
    ids=["nan", "inf", "beyond-float32", "short", "long"],
)
def test_an_embedding_is_finite_float32_of_the_right_length(values: tuple[float, ...]) -> None:
    """Wrong lengths and values a float32 vector cannot hold raise ValidationError."""
    with pytest.raises(ValidationError):
        checks.embedding(values, 2)
    assert checks.embedding((1, -3.4e38), 2) == [1.0, -3.4e38]


def test_a_lease_is_free_unless_another_owner_holds_it_unexpired() -> None:
    """Free, expired or already the owner's: taken; another's until it expires: not."""
    later = NOW + timedelta(seconds=1)
    assert checks.lease_is_free(None, None, "w1", NOW)
    assert checks.lease_is_free("w1", later, "w1", NOW)
    assert checks.lease_is_free("w2", NOW, "w1", NOW)
    assert not checks.lease_is_free("w2", later, "w1", NOW)


def test_versions_follow_by_one() -> None:
    """A versioned write is accepted only as the stored version + 1."""
    checks.next_version("snapshot", "p1", 3, 2)
    with pytest.raises(ConflictError, match="snapshot version is not current"):
        checks.next_version("snapshot", "p1", 3, 3)


def test_counts_and_errors_as_stored() -> None:
    """Every status is counted (0 when absent); stored errors are cut to 500 characters."""
    assert checks.episode_counts([("pending", 2)]) == {"pending": 2, "enriched": 0, "failed": 0}
    assert checks.stored_error("x" * 600) == "x" * checks.ERROR_MAX_CHARS
    assert checks.limit(-5) == 0


def test_batch_writes_must_touch_every_row() -> None:
    """Fewer rows written than given: ValidationError, or ConflictError for a race."""
    checks.wrote_all("ok", "p1", 2, 2)
    with pytest.raises(ValidationError):
        checks.wrote_all("a fact names an unknown user", "p1", 2, 1)
    with pytest.raises(ConflictError):
        checks.insights_consumed("p1", 2, 1)
    with pytest.raises(ConflictError):
        checks.staged_committed("p1", 1, 0)


def test_biography_entries_are_written_once_within_the_cap() -> None:
    """A new entry restating a held one or one earlier in the same call (same words, or a
    cosine of at least 0.95) returns that one unwritten; the rest are written only while
    they fit the cap, else nothing is."""
    from sonality.models import BiographyEntry

    def entry(entry_id: str, text: str, *vector: float) -> BiographyEntry:
        return BiographyEntry(
            id=entry_id, persona_id="p", text=text, created_at=NOW, vector=tuple(vector)
        )

    held = entry("h", "I grew up by the sea.", 1.0, 0.0, 0.0)
    new = [
        entry("a", "I GREW UP by the sea", 0.0, 1.0, 0.0),
        entry("b", "A bakery was my first job.", 0.0, 0.0, 1.0),
        entry("c", "My first job: a bakery.", 0.0, 0.1, 1.0),
        entry("d", "Seaside childhood.", 0.99, 0.1, 0.0),
    ]
    out, fresh = checks.biography_to_write("p", [held], new, cap=2)
    assert [(e.id, written) for e, written in out] == [
        ("h", False),
        ("b", True),
        ("b", False),
        ("h", False),
    ]
    assert fresh == [new[1]]
    with pytest.raises(ValidationError):
        checks.biography_to_write("p", [held], new, cap=1)
