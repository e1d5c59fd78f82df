"""Snapshot validation rejects stubs, collapses and runaways; word_diff shows the change."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sonality.core.snapshot import SnapshotRejection, validate_snapshot
from sonality.models import word_diff

OLD = "I care about careful reasoning and I say so when I disagree. " * 2  # 122 chars


def test_reasonable_rewrite_passes() -> None:
    """A rewrite of similar length passes with its retention ratio."""
    new = OLD.strip() + " I have come to enjoy questions about energy."
    verdict = validate_snapshot(OLD, new)
    assert verdict.ok
    assert verdict.reason is None
    assert verdict.retention_ratio == pytest.approx(len(new) / len(OLD.strip()))


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (OLD, "Too short.", SnapshotRejection.TOO_SHORT),
        (OLD, "   " + "x" * 29 + "   ", SnapshotRejection.TOO_SHORT),
        (OLD, OLD[:60], SnapshotRejection.SHRUNK),
        (OLD, OLD * 4, SnapshotRejection.GREW_TOO_MUCH),
        ("", "y" * 8_001, SnapshotRejection.TOO_LONG),
    ],
    ids=["stub", "whitespace-padded-stub", "shrunk", "grew", "too-long"],
)
def test_rejections(old: str, new: str, reason: SnapshotRejection) -> None:
    """Each failure shape is rejected with its own reason."""
    verdict = validate_snapshot(old, new)
    assert not verdict.ok
    assert verdict.reason is reason
    assert verdict.detail


def test_retention_boundary_is_inclusive() -> None:
    """Keeping exactly 60% of the old length is enough."""
    old = "a" * 100
    assert validate_snapshot(old, "b" * 60).ok
    assert validate_snapshot(old, "b" * 59).reason is SnapshotRejection.SHRUNK


def test_growth_boundary_is_inclusive() -> None:
    """Growing to exactly 3x is allowed; beyond is not."""
    old = "a" * 100
    assert validate_snapshot(old, "b" * 300).ok
    assert validate_snapshot(old, "b" * 301).reason is SnapshotRejection.GREW_TOO_MUCH


def test_trivial_old_snapshot_may_grow_freely() -> None:
    """An empty or placeholder old snapshot has no retention or growth limit."""
    verdict = validate_snapshot("", "z" * 500)
    assert verdict.ok
    assert verdict.retention_ratio == 1.0
    assert validate_snapshot("I am new.", "z" * 500).ok


def test_limits_are_configurable() -> None:
    """The thresholds come from the caller (settings)."""
    assert not validate_snapshot(OLD, OLD, max_chars=100).ok
    assert validate_snapshot(OLD, OLD[:40], min_retention=0.3).ok


@given(st.text(max_size=300), st.text(max_size=300))
def test_verdict_is_consistent(old: str, new: str) -> None:
    """ok iff no reason; an accepted text is never shorter than min_chars."""
    verdict = validate_snapshot(old, new)
    assert verdict.ok is (verdict.reason is None)
    if verdict.ok:
        assert len(new.strip()) >= 30


def test_word_diff_runs() -> None:
    """Kept, removed and added words come as runs."""
    runs = word_diff("I like tea a lot", "I like coffee a lot today")
    assert runs == [("=", "I like"), ("-", "tea"), ("+", "coffee"), ("=", "a lot"), ("+", "today")]


words = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=30)


@given(words, words)
def test_word_diff_rebuilds_both_sides(old: list[str], new: list[str]) -> None:
    """'=' with '-' runs rebuild the old words; '=' with '+' runs rebuild the new."""
    runs = word_diff(" ".join(old), " ".join(new))
    assert " ".join(t for op, t in runs if op in "=-").split() == old
    assert " ".join(t for op, t in runs if op in "=+").split() == new


def test_a_kept_phrase_the_old_text_said_must_stay() -> None:
    """A kept phrase (a fixed trait) in the old text and missing from the new one is
    ``dropped_trait``, by whole words, case-folded; one the old text never said does not
    bind, and a reworded sentence that keeps the phrase passes."""
    old = OLD + " I am blunt about weak arguments."
    gone = OLD + " I am gentle with weak arguments, always."
    verdict = validate_snapshot(old, gone, kept=("Blunt about weak arguments", "stoic"))
    assert verdict.reason is SnapshotRejection.DROPPED_TRAIT
    assert verdict.detail == "dropped 'Blunt about weak arguments'"
    kept = "Being blunt  about weak\narguments is how I am. " + OLD
    assert validate_snapshot(old, kept, kept=("blunt about weak arguments",)).ok
    assert not validate_snapshot(old, old.replace("blunt", "bluntish"), kept=("blunt",)).ok
