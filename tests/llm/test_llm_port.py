"""The ``LLM`` port declares what the runtime uses (``prompts``, ``usage``) and a plug-in
adapter that lacks any of it is refused with a configuration error naming the gap."""

from __future__ import annotations

import pytest

from sonality.config import Settings
from sonality.errors import ConfigError, exit_code_for
from sonality.llm.litellm_llm import LiteLLM
from sonality.llm.prompts import Prompt
from sonality.llm.usage import metering
from sonality.ports import LLM, PromptSource, UsageSink
from sonality.testing import ScriptedLLM
from sonality.wiring import load_llm_factory


@pytest.mark.parametrize(
    "llm", [ScriptedLLM(), LiteLLM("openai/test-model")], ids=["scripted", "litellm"]
)
def test_both_adapters_declare_prompts_and_usage(llm: LLM) -> None:
    """LiteLLM and ScriptedLLM satisfy the port, prompts and usage included: the runtime
    reads a prompt's fixed text and meters usage through them, no lookup needed."""
    assert isinstance(llm, LLM)
    assert isinstance(llm.prompts, PromptSource) and isinstance(llm.usage, UsageSink)
    assert "$message" in llm.prompts.fixed_text(Prompt.TALK)


async def test_a_scripted_reply_is_booked_on_the_metered_turn() -> None:
    """A call made inside ``metering()`` counts on the adapter's meter and on the turn's,
    with no wrapper installed on the adapter."""
    llm = ScriptedLLM().on(Prompt.PING, "pong")
    meter_before = llm.usage
    with metering() as turn:
        assert await llm.text(Prompt.PING, {}, component="doctor") == "pong"
    assert llm.usage is meter_before
    assert turn.snapshot()["doctor"].calls == llm.usage.snapshot()["doctor"].calls == 1


def test_a_factory_returning_a_complete_llm_is_accepted() -> None:
    """``--llm tests.llm.plugins:scripted`` gives back the adapter the callable built."""
    llm = load_llm_factory("tests.llm.plugins:scripted", Settings())
    assert isinstance(llm, ScriptedLLM)


@pytest.mark.parametrize(
    ("factory", "missing"),
    [
        ("without_usage_or_prompts", ["prompts", "usage"]),
        ("with_prompts_lacking_fixed_text", ["prompts.fixed_text"]),
        ("not_an_adapter", ["model", "prompts", "usage", "structured", "text"]),
    ],
)
def test_a_factory_missing_part_of_the_port_is_a_config_error(
    factory: str, missing: list[str]
) -> None:
    """An adapter lacking a member of the port is refused at start-up, naming what it
    lacks (exit code 3), instead of failing in the middle of a turn."""
    with pytest.raises(ConfigError) as caught:
        load_llm_factory(f"tests.llm.plugins:{factory}", Settings())
    assert caught.value.context["missing"] == missing
    assert ", ".join(missing) in caught.value.message
    assert exit_code_for(caught.value) == 3
