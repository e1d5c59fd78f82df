"""``sonality.core`` stays pure and tidy: no I/O libraries, sorted and honest ``__all__``."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import sonality.core
from tests.conftest import parse_python

MODULES = sorted(m.name for m in pkgutil.iter_modules(sonality.core.__path__))
FORBIDDEN = {
    "neo4j",
    "litellm",
    "sqlite3",
    "aiosqlite",
    "logging",
    "structlog",
    "apscheduler",
    "httpx",
    "requests",
    "os",
    "socket",
    "subprocess",
}


def test_expected_modules_exist() -> None:
    """The core holds the rule modules and the pure planners of the design."""
    expected = {
        "budget",
        "decay",
        "enrichment",
        "health",
        "opinion",
        "reflection",
        "retrieval",
        "snapshot",
        "triggers",
    }
    assert expected <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_no_io_imports(name: str) -> None:
    """Core modules import no database, LLM, logging or OS-facing library."""
    source = Path(sonality.core.__path__[0], f"{name}.py").read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(parse_python(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_exists(name: str) -> None:
    """Each module's ``__all__`` is sorted and names only things it defines."""
    module = importlib.import_module(f"sonality.core.{name}")
    exported = list(module.__all__)
    assert exported == sorted(exported)
    assert all(hasattr(module, item) for item in exported)
