"""The README's Python examples are the scripts in samples/, and they run as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sonality.errors import ConfigError, PersonaNotFound
from sonality.service import Sonality
from sonality.storage.sqlite.store import SqliteStore
from sonality.sync import SonalitySync

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", ["quickstart.py", "quickstart_sync.py"])
def test_the_quickstart_scripts_run_twice_on_a_fresh_store(script: str, tmp_path: Path) -> None:
    """Each sample runs without a model on a fresh SQLite store, prints the context block
    (with the peanut fact's episode), and a second run stores nothing twice."""
    env = {
        **os.environ,
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'q.db'}",
        "SONALITY_MODEL": "",
        "SONALITY_LOG_LEVEL": "WARNING",
    }
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, str(ROOT / "samples" / script)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        assert "## Who you are (Ada)" in out.stdout and "peanuts" in out.stdout
    if script == "quickstart_sync.py":
        assert "episodes: 1" in out.stdout


def test_the_readme_shows_the_quickstart_script() -> None:
    """README's Python section is the sample script, verbatim."""
    readme = (ROOT / "README.md").read_text("utf-8")
    body = (ROOT / "samples" / "quickstart.py").read_text("utf-8").split('"""', 2)[2].strip()
    assert body in readme


def test_sonality_sync_wraps_every_coroutine_method(tmp_path: Path) -> None:
    """Blocking calls return what the coroutine returns, errors come through as they are,
    non-coroutine members pass through, and a closed wrapper refuses calls."""

    async def build() -> Sonality:
        store = await SqliteStore.open(tmp_path / "s.db")
        await store.migrate()
        return Sonality(store=store, owns_store=True)

    with SonalitySync(build=build) as s:
        created: Any = s.create_persona("ada", name="Ada", core_identity="I am Ada.")
        assert created.id == "ada" and [p.id for p in s.personas()] == ["ada"]
        with pytest.raises(PersonaNotFound):
            s.beliefs("nobody")
        assert s.count_tokens("hello world") > 0
    with pytest.raises(RuntimeError, match="closed"):
        s.personas()
    with pytest.raises(ConfigError):
        SonalitySync()
