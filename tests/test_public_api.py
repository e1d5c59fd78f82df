"""The public namespace is curated: what it exports is a decision, checked here."""

from __future__ import annotations

import subprocess
import sys

import sonality


def test_public_names_are_exactly_the_curated_list() -> None:
    """`sonality.__all__` is the documented API and every name resolves."""
    assert sonality.__all__ == sorted(sonality.__all__)
    assert set(sonality.__all__) == {
        "Belief",
        "Context",
        "Episode",
        "Insight",
        "Persona",
        "Recorded",
        "Settings",
        "Snapshot",
        "Sonality",
        "SonalityError",
        "UserFact",
        "__version__",
    }
    for name in sonality.__all__:
        assert getattr(sonality, name) is not None


def test_importing_the_package_does_not_import_heavy_dependencies() -> None:
    """`import sonality` and the CLI module load neither litellm nor the Neo4j driver."""
    code = (
        "import sys, sonality, sonality.cli;"
        "print(sorted(m for m in ('litellm', 'neo4j', 'apscheduler') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
