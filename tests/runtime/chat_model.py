"""The ``--llm`` plug-in the terminal tests pass to ``sonality chat``: the runtime's
scripted model (``tests/runtime/script.py``), built from the settings like a real one."""

from __future__ import annotations

from typing import Any

from sonality.testing import ScriptedLLM
from tests.runtime import script


def factory(settings: Any) -> ScriptedLLM:
    """A scripted model answering every prompt ``respond`` uses."""
    return script.scripted()
