"""The public namespace is curated: what it exports is a decision, checked here."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import sonality
from sonality.models import BiographySource


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
        "SelfModel",
        "Settings",
        "Snapshot",
        "Sonality",
        "SonalityError",
        "SonalitySync",
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


# ``Sonality``'s public methods: name -> (kind, coroutine?, parameters after self/cls as
# (name, kind, default)). ``-`` marks "no default". A change here is an API change.
_REQUIRED = "-"
_P, _K = "POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY"
SONALITY_METHODS: dict[str, tuple[str, bool, list[tuple[str, str, object]]]] = {
    "add_biography": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("text", _P, _REQUIRED),
            ("importance", _K, 5),
            ("source", _K, BiographySource.AUTHORED),
        ],
    ),
    "add_due_listener": ("method", False, [("listener", _P, _REQUIRED)]),
    "biography": ("method", True, [("persona_id", _P, _REQUIRED), ("limit", _K, 10_000)]),
    "oversized_constraints": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("limit", _K, 20)],
    ),
    "remove_biography": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("entry_id", _K, _REQUIRED)],
    ),
    "add_fact": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("user_id", _K, _REQUIRED),
            ("episode_id", _K, _REQUIRED),
            ("text", _K, _REQUIRED),
            ("kind", _K, "fact"),
            ("severity", _K, 1),
        ],
    ),
    "affect_state": ("method", True, [("persona_id", _P, _REQUIRED), ("user_id", _K, _REQUIRED)]),
    "backlog": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "beliefs": ("method", True, [("persona_id", _P, _REQUIRED), ("include_retired", _K, False)]),
    "check_exchange": ("method", False, [("exchange", _P, _REQUIRED)]),
    "close": ("method", True, []),
    "create_key": (
        "method",
        True,
        [("scope", _K, _REQUIRED), ("persona_ids", _K, ()), ("name", _K, "")],
    ),
    "key": ("method", True, [("key_id", _P, _REQUIRED)]),
    "keys": ("method", True, []),
    "revoke_key": ("method", True, [("key_id", _P, _REQUIRED)]),
    "search": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("user_id", _K, _REQUIRED),
            ("query", _K, _REQUIRED),
            ("limit", _K, 10),
        ],
    ),
    "context": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("user_id", _K, _REQUIRED),
            ("message", _K, _REQUIRED),
            ("narrative", _K, None),
            ("token_budget", _K, None),
        ],
    ),
    "count_tokens": ("method", False, [("text", _P, _REQUIRED)]),
    "correct_fact": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("fact_id", _K, _REQUIRED),
            ("text", _K, _REQUIRED),
            ("kind", _K, None),
            ("severity", _K, None),
        ],
    ),
    "create_persona": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("name", _K, _REQUIRED),
            ("core_identity", _K, _REQUIRED),
            ("snapshot", _K, None),
            ("self_model", _K, None),
            ("biography", _K, ()),
        ],
    ),
    "drain": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("conversation_id", _K, None),
            ("max_seconds", _K, None),
            ("everywhere", _K, False),
        ],
    ),
    "delete_episode": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("episode_id", _K, _REQUIRED)],
    ),
    "delete_persona": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "due_personas": ("method", True, []),
    "enrich_pending": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("limit", _K, None), ("retry_failed", _K, False)],
    ),
    "episodes": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("user_id", _K, None),
            ("conversation_id", _K, None),
            ("limit", _K, 20),
            ("before", _K, None),
        ],
    ),
    "erasures": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "erasure_subject": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("kind", _K, _REQUIRED), ("subject_id", _K, _REQUIRED)],
    ),
    "export": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "forget_user": ("method", True, [("persona_id", _P, _REQUIRED), ("user_id", _K, _REQUIRED)]),
    "forget_everywhere": ("method", True, [("user_id", _K, _REQUIRED)]),
    "import_": ("method", True, [("archive", _P, _REQUIRED)]),
    "evidence": ("method", True, [("persona_id", _P, _REQUIRED), ("topic", _P, _REQUIRED)]),
    "facts": ("method", True, [("persona_id", _P, _REQUIRED), ("user_id", _K, _REQUIRED)]),
    "from_settings": ("classmethod", False, [("settings", _P, _REQUIRED), ("migrate", _K, None)]),
    "insights": ("method", True, [("persona_id", _P, _REQUIRED), ("status", _K, None)]),
    "lag": ("method", True, [("persona_ids", _P, None), ("now", _K, None)]),
    "retract_fact": ("method", True, [("persona_id", _P, _REQUIRED), ("fact_id", _K, _REQUIRED)]),
    "monologue": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("conversation_id", _K, _REQUIRED)],
    ),
    "narrative": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("conversation_id", _K, _REQUIRED)],
    ),
    "narratives": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("conversation_id", _K, _REQUIRED)],
    ),
    "open": (
        "classmethod",
        True,
        [
            ("settings", _P, _REQUIRED),
            ("migrate", _K, None),
            ("llm", _K, None),
            ("owner", _K, None),
        ],
    ),
    "pending": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("conversation_id", _K, None)],
    ),
    "persona": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "personas": ("method", True, []),
    "record": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("user_id", _K, _REQUIRED),
            ("conversation_id", _K, _REQUIRED),
            ("message", _K, _REQUIRED),
            ("response", _K, _REQUIRED),
            ("episode_id", _K, None),
            ("enrich", _K, None),
        ],
    ),
    "record_batch": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("exchanges", _P, _REQUIRED),
            ("enrich", _K, "off"),
        ],
    ),
    "reflect": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("force", _K, False),
            ("dry_run", _K, False),
            ("trigger", _K, None),
        ],
    ),
    "reflection_due": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "reflections": ("method", True, [("persona_id", _P, _REQUIRED), ("limit", _K, 20)]),
    "remove_due_listener": ("method", False, [("listener", _P, _REQUIRED)]),
    "respond": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("user_id", _K, _REQUIRED),
            ("conversation_id", _K, _REQUIRED),
            ("message", _K, _REQUIRED),
            ("episode_id", _K, None),
            ("mode", _K, None),
            ("affect", _K, None),
            ("on_text", _K, None),
            ("started", _K, None),
        ],
    ),
    "retry_thinking": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "rollback_snapshot": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("to_version", _P, _REQUIRED)],
    ),
    "set_affect": (
        "method",
        True,
        [
            ("persona_id", _P, _REQUIRED),
            ("user_id", _K, _REQUIRED),
            ("emotional_state", _K, None),
            ("relationship", _K, None),
            ("hard_goals", _K, None),
            ("soft_goals", _K, None),
        ],
    ),
    "set_runtime": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("mode", _K, None), ("affect", _K, None)],
    ),
    "snapshot": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "snapshots": ("method", True, [("persona_id", _P, _REQUIRED)]),
    "thinker_turns": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("conversation_id", _K, _REQUIRED)],
    ),
    "turn_usage": (
        "method",
        True,
        [("persona_id", _P, _REQUIRED), ("conversation_id", _K, _REQUIRED)],
    ),
}

# The documented direct construction ``Sonality(store=..., llm=..., embedder=...,
# clock=...)`` and the tunables callers pass today. New keyword-only parameters with a
# default may join them; none of these may go or change.
SONALITY_CONSTRUCTOR: list[tuple[str, str, object]] = [
    ("store", _K, _REQUIRED),
    ("llm", _K, None),
    ("embedder", _K, None),
    ("clock", _K, None),
    ("opinion", _K, None),
    ("limits", _K, None),
    ("count_tokens", _K, None),
    ("owns_store", _K, False),
    ("reflection", _K, None),
    ("owner", _K, None),
    ("runtime", _K, None),
]

# Attributes applications, the CLI and the worker read off an instance.
SONALITY_ATTRIBUTES = (
    "clock",
    "context_builder",
    "embedder",
    "enricher",
    "limits",
    "llm",
    "opinion",
    "recorder",
    "reflector",
    "runtime",
    "store",
)


def _parameters(function: Callable[..., Any]) -> list[tuple[str, str, object]]:
    params = list(inspect.signature(function).parameters.values())[1:]  # self / cls
    return [
        (p.name, p.kind.name, _REQUIRED if p.default is inspect.Parameter.empty else p.default)
        for p in params
    ]


def _public_methods() -> dict[str, tuple[str, bool, list[tuple[str, str, object]]]]:
    from sonality.service import Sonality

    found = {}
    members = {}  # what the class defines or inherits (the reads come from mind.reads)
    for klass in reversed(Sonality.__mro__[:-1]):
        members.update(vars(klass))
    for name, member in members.items():
        if name.startswith("_"):
            continue
        kind = "classmethod" if isinstance(member, classmethod) else "method"
        function = member.__func__ if isinstance(member, classmethod) else member
        if not callable(function):
            continue
        found[name] = (kind, inspect.iscoroutinefunction(function), _parameters(function))
    return found


def test_sonality_public_methods_are_pinned() -> None:
    """Every public method of ``Sonality`` keeps its name, kind and parameters (names,
    kinds, defaults), and no public method appears or disappears unnoticed."""
    found = _public_methods()
    assert sorted(found) == sorted(SONALITY_METHODS)
    for name, expected in SONALITY_METHODS.items():
        assert found[name] == expected, name


def test_sonality_constructor_keeps_its_documented_parameters() -> None:
    """``Sonality(store=..., llm=..., embedder=..., clock=..., ...)`` keeps every keyword
    it has always taken, in order (the constructor takes ``**given: Unpack[Given]``, the
    one list of part names): an old call never breaks. Each keeps its default, which
    ``assemble`` fills; only ``store`` is required."""
    import inspect

    from sonality.mind.parts import Given
    from sonality.service import Sonality

    [_, (_, given_kind)] = [
        (p.name, p.kind) for p in inspect.signature(Sonality.__init__).parameters.values()
    ]
    assert given_kind is inspect.Parameter.VAR_KEYWORD
    names = list(Given.__annotations__)
    assert names[: len(SONALITY_CONSTRUCTOR)] == [name for name, _, _ in SONALITY_CONSTRUCTOR]
    assert "Required[Store]" in str(Given.__annotations__["store"])
    assert all(default is _REQUIRED for name, _, default in SONALITY_CONSTRUCTOR if name == "store")


async def test_sonality_instance_attributes_stay(sqlite_store: Any) -> None:
    """A directly built ``Sonality`` exposes the parts callers read (store, llm, clock,
    reflector …), the very objects it was given."""
    from sonality.service import Sonality
    from sonality.testing import FrozenClock, ScriptedLLM

    llm, clock = ScriptedLLM(), FrozenClock()
    app = Sonality(store=sqlite_store, llm=llm, clock=clock)
    for name in SONALITY_ATTRIBUTES:
        assert getattr(app, name) is not None, name
    assert (app.store, app.llm, app.clock) == (sqlite_store, llm, clock)
    await app.close()
