"""The CLI package's shape: one registry, command modules that import only the shell, and
exit codes that come from error classes, never from a hand-written ``SystemExit``."""

from __future__ import annotations

import ast
from pathlib import Path

import sonality
import sonality.cli
from tests.conftest import parse_python

PACKAGE = Path(sonality.__file__).parent
CLI = Path(sonality.cli.__file__).parent


def _tree(path: Path) -> ast.Module:
    return parse_python(path.read_text("utf-8"), filename=str(path))


def _imported(tree: ast.Module) -> set[str]:
    """Every module name an import statement in ``tree`` names (``from a import b`` gives
    ``a`` and ``a.b``, since ``b`` may be a module)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_commands_are_added_in_one_place() -> None:
    """Only sonality/cli/__init__.py calls add_command: nothing registers itself."""
    callers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, ast.Attribute) and node.attr == "add_command"
            for node in ast.walk(_tree(path))
        )
    )
    assert callers == ["cli/__init__.py"]


def test_command_modules_import_only_the_shell() -> None:
    """Each command module imports nothing from sonality.cli but sonality.cli.shell (and the
    helper modules, which hold no command: the Browser asset server), and the shell imports
    no command module; so no module depends on the registry's import order."""
    helpers = {"sonality.cli.browser_assets"}
    for helper in helpers:
        assert "@click" not in (CLI / f"{helper.rpartition('.')[2]}.py").read_text("utf-8")
    modules = sorted(p for p in CLI.glob("*.py") if p.name != "__init__.py")
    assert {p.stem for p in modules} >= {"shell", "schema", "memory", "reflection", "chat"}
    for path in modules:
        cli_imports = {
            name
            for name in _imported(_tree(path))
            if name == "sonality.cli" or name.startswith("sonality.cli.")
        }
        allowed = set() if path.stem == "shell" else {"sonality.cli.shell"}
        extra = {
            n
            for n in cli_imports
            if n not in allowed | helpers
            and not n.startswith(("sonality.cli.shell.", *(f"{h}." for h in helpers)))
        }
        assert not extra, f"{path.name} imports {sorted(extra)}"


def test_no_exit_status_is_written_by_hand() -> None:
    """No module of the CLI raises SystemExit or calls sys.exit itself, and the registry has
    no late import (a ``noqa: E402``): exit codes come from the errors' classes."""
    for path in CLI.glob("*.py"):
        text = path.read_text("utf-8")
        assert "E402" not in text, path.name
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Name):
                assert node.id != "SystemExit", f"{path.name}:{node.lineno}"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                assert (node.value.id, node.attr) != ("sys", "exit"), f"{path.name}:{node.lineno}"
