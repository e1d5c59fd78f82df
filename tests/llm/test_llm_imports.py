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
        "import sonality.llm.litellm_llm, sonality.llm.budget, sonality.llm.cost_map\n"
        "import sonality.testing\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_a_direct_call_never_loads_litellm() -> None:
    """An OpenAI-compatible endpoint is called, validated and priced (from the cost map
    litellm ships) without importing litellm: a worker or server on one starts and exits
    without its seconds of import."""
    code = (
        "import asyncio, sys\n"
        "from pydantic import BaseModel\n"
        "from sonality.llm.litellm_llm import LiteLLM\n"
        "from sonality.testing.openai_server import FakeOpenAI\n"
        "class Verdict(BaseModel):\n"
        "    score: float\n"
        "async def main():\n"
        "    with FakeOpenAI(answer=lambda r: {'score': 0.5}) as fake:\n"
        "        llm = LiteLLM('openai/gpt-4o-mini', api_base=fake.url, api_key='k')\n"
        "        reply = await llm.structured('ping', {}, Verdict, component='doctor')\n"
        "        await llm.aclose()\n"
        "    assert reply.score == 0.5 and llm.transport == 'direct'\n"
        "    assert llm.usage.total().cost_usd > 0 and llm.usage.total().unpriced_calls == 0\n"
        "asyncio.run(main())\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr


def test_litellm_loads_with_its_bundled_cost_map_by_default() -> None:
    """Without ``LITELLM_LOCAL_MODEL_COST_MAP`` in the environment, the first model call's
    import of litellm reads the map litellm ships: no download (which offline retries for
    seconds and warns four times), nothing on stderr."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    code = (
        "import os\n"
        "from sonality.llm.cost_map import import_litellm\n"
        "litellm = import_litellm()\n"
        "assert os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] == 'True'\n"
        "assert litellm.model_cost, 'no cost map'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "cost map" not in result.stderr, result.stderr
