"""The direction of imports is the architecture: no cycles, nothing points up a layer.

Every module of the ``sonality`` package is parsed with ``ast``; every import counts,
wherever it is written (module level, inside a function, under ``TYPE_CHECKING``), since
each one is a dependency a reader has to follow. The layers, low to high (a module may
import its own layer's package and any lower layer, never a sibling package of its layer
and never a higher layer):

1. ``errors``, ``lazy`` — the exception tree, and lazy re-exports (import nothing of
   Sonality)
2. ``models`` — the vocabulary every layer speaks (a commit object that contradicts
   itself raises an ``errors`` type when built)
3. ``core/`` — pure rules
4. ``ports`` — the Protocols adapters satisfy
5. ``config``, ``resources``, ``observability`` — settings, shipped files, logging setup
6. ``llm/``, ``storage/`` — the adapters (siblings: neither imports the other)
7. ``mind/`` — the pipelines over core and ports; they receive parts, never the facade
8. ``wiring`` — builds the parts from settings
9. ``testing/`` — the shipped fakes (anything below ``service``)
10. ``service`` — the facade, ``Sonality(**parts)``
11. ``sonality`` itself — the public namespace (re-exports the facade)
12. ``scheduler`` — the worker
13. ``eval/``, ``server/`` — the evaluation suite and the HTTP server (the only package
    with the web stack), both over the facade; the CLI mounts the one's commands and
    starts the other (``sonality serve``, ``sonality mcp``)
14. ``cli/`` — the entry point
15. ``__main__``

Only the entry points (layer 14) may import ``testing/``: production code never runs on
a fake. A module is placed by the first component of its name after ``sonality.``, so the
rule holds through renames inside a package (``storage/neo4j/…``, ``cli/shell.py``) and
for the flat names they replace (``cli_chat.py`` counts as ``cli``). A new top-level name
fails the test until it is given a layer here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import sonality
from tests.conftest import collector_held, parse_python

PACKAGE = Path(sonality.__file__).resolve().parent
ROOT = "<root>"
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "lazy"),
    ("models",),
    ("core",),
    ("ports",),
    ("config", "resources", "observability"),
    ("llm", "storage"),
    ("mind",),
    ("wiring",),
    ("testing",),
    ("service",),
    ("sync",),
    (ROOT,),
    ("scheduler",),
    ("eval", "server"),
    ("cli",),
    ("__main__",),
)
ENTRY_POINTS = LAYERS[-2]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(["sonality", *parts])] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module ``name`` refers to (or the package holding it); None outside sonality."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(package: str, source: str) -> Iterator[tuple[str, int]]:
    """(imported sonality module, line) for every import statement of ``source``, a
    module of ``package`` (relative imports resolve against it)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name)
                if target is not None:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = _resolve(f"{base}.{alias.name}")
                if target is not None:
                    yield target, node.lineno


@cache
def _edges() -> dict[str, dict[str, int]]:
    """Every module's imports of other ``sonality`` modules, with the line of the first
    (parsed once per session; the collector is held off while parsing, see
    :func:`tests.conftest.collector_held`)."""
    graph: dict[str, dict[str, int]] = {m: {} for m in MODULES}
    with collector_held():
        for module, path in MODULES.items():
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for target, line in _imports(package, path.read_text(encoding="utf-8")):
                if target != module and not module.startswith(f"{target}."):
                    graph[module].setdefault(target, line)
    return graph


def _area(module: str) -> str:
    """The layer key of a module: the first name after ``sonality.`` (``cli_chat`` → cli)."""
    first = module.split(".")[1] if "." in module else ROOT
    for group in LAYERS:
        for key in group:
            if first == key or first.startswith(f"{key}_"):
                return key
    return first


def _rank(area: str) -> int | None:
    return next((i for i, group in enumerate(LAYERS) if area in group), None)


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_every_module_has_a_layer() -> None:
    """Each top-level name of the package is placed in exactly one layer."""
    keys = [key for group in LAYERS for key in group]
    assert len(keys) == len(set(keys))
    assert sorted({_area(m) for m in MODULES if _rank(_area(m)) is None}) == []


def test_no_import_cycles() -> None:
    """No two modules of the package import each other, directly or through others."""
    assert _cycles(_edges()) == []


def test_imports_point_down_the_layers() -> None:
    """A module imports only its own package and lower layers: never a higher layer and
    never a sibling of its layer (``llm`` and ``storage`` stay apart; so do the entry
    points)."""
    bad = []
    for module, targets in _edges().items():
        area = _area(module)
        for target, line in sorted(targets.items()):
            other = _area(target)
            if other == area:
                continue
            mine, theirs = _rank(area), _rank(other)
            assert mine is not None and theirs is not None
            if theirs >= mine:
                bad.append(f"{module}:{line} -> {target} ({area} -> {other})")
    assert bad == []


def test_only_entry_points_import_the_fakes() -> None:
    """``sonality.testing`` is imported by the entry points alone (never by production
    layers), and imports nothing from ``service`` upwards."""
    bad = [
        f"{module} -> {target}"
        for module, targets in _edges().items()
        for target in targets
        if _area(target) == "testing" and _area(module) not in ("testing", *ENTRY_POINTS)
    ]
    assert bad == []


def test_the_walk_sees_function_local_and_type_checking_imports() -> None:
    """The import walk finds imports inside functions and under ``TYPE_CHECKING``,
    resolves relative imports and ``from package import module`` to the module, and
    ignores other libraries."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from sonality.ports import Store\n"
        "def f():\n"
        "    import sonality.core.opinion\n"
        "    from sonality import errors\n"
        "    from . import context\n"
        "    from ..llm.prompts import PromptLibrary\n"
    )
    found = dict(_imports("sonality.mind", source))
    assert found == {
        "sonality.ports": 3,
        "sonality.core.opinion": 5,
        "sonality.errors": 6,
        "sonality.mind.context": 7,
        "sonality.llm.prompts": 8,
    }


FACES = ("server", "cli")
"""The faces people use: the HTTP server (REST, OpenAI-compatible, MCP) and the CLI."""
FACE_DOORS = ("sonality", "sonality.models", "sonality.errors", "sonality.wiring")
"""What a face may import of the layers below it: the facade (the public namespace,
``sonality``), its vocabulary, its errors, and the wiring (settings → parts, and the few
entry-point helpers it re-exports)."""
FACE_NEIGHBOURS = ("server", "cli", "eval", "scheduler", "testing")
"""Besides the doors, a face may use the other entry-level packages: the CLI starts the
server, the worker and the evaluation suite, and its ``demo``
runs on the shipped scripted model (``testing``), which needs no API key."""


def _door(target: str) -> bool:
    return any(target == door or target.startswith(f"{door}.") for door in FACE_DOORS[1:]) or (
        target == FACE_DOORS[0]
    )


def test_the_faces_go_through_the_facade() -> None:
    """``server/`` and ``cli/`` never reach past the facade: they import ``sonality``,
    ``sonality.models``, ``sonality.errors`` and ``sonality.wiring`` (and the other
    entry-level packages), never ``mind``, ``storage``, ``core``, ``llm``, ``ports``,
    ``config`` or the facade's own module — anything they need is a name of those four."""
    bad = [
        f"{module}:{line} -> {target}"
        for module, targets in _edges().items()
        if _area(module) in FACES
        for target, line in sorted(targets.items())
        if not _door(target) and _area(target) not in FACE_NEIGHBOURS
    ]
    assert bad == []


def test_the_faces_rule_sees_a_reach_past_the_facade() -> None:
    """The rule's own check: a face importing ``mind``, ``storage`` or ``service`` is caught,
    one importing the four doors is not."""
    reach = ["sonality.mind.talker", "sonality.storage.checks", "sonality.service"]
    assert [t for t in reach if not _door(t) and _area(t) not in FACE_NEIGHBOURS] == reach
    doors = ["sonality", "sonality.models.keys", "sonality.errors", "sonality.wiring"]
    assert [t for t in doors if not _door(t)] == []


FACADE_LINES = 700
"""Issue 28: the facade validates and delegates; what grows belongs in ``mind/``."""


def _facade_methods() -> list[str]:
    tree = parse_python((PACKAGE / "service.py").read_text(encoding="utf-8"))
    return [
        node.name
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == "Sonality"
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def test_the_facade_stays_thin() -> None:
    """``service.py`` stays within its line budget and schedules no enrichment itself."""
    lines = (PACKAGE / "service.py").read_text(encoding="utf-8").count("\n")
    assert lines <= FACADE_LINES, f"service.py has {lines} lines; move logic into mind/"
    methods = _facade_methods()
    assert "record" in methods and "respond" in methods  # the walk sees the facade
    assert [m for m in methods if m.startswith("_enrich_")] == []
