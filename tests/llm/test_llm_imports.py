"""Importing Sonality's light modules must not import litellm (it takes seconds)."""

from __future__ import annotations

import subprocess
import sys


def test_light_modules_do_not_import_litellm() -> None:
    """sonality.llm, its prompts/embedders/usage/tokens/replies and sonality.testing stay light."""
    code = (
        "import sys\n"
        "import sonality.llm, sonality.llm.prompts, sonality.llm.embedders\n"
        "import sonality.llm.usage, sonality.llm.tokens, sonality.llm.replies\n"
        "import sonality.testing\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
