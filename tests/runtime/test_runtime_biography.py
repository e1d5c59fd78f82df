"""The persona's own past in ``respond`` (issue 25, seed 002), on both stores: recalled with
the appraisal's interpretation of the message, at most three entries, read by the appraisal
and by the formulation; the plain Talker prompt keeps MIRROR's inputs."""

from __future__ import annotations

from sonality.models import BiographySource
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.runtime import script

RELEVANT = "Every Sunday I would send my sister a message from the harbour."
UNRELATED = (
    "I never learnt to ride a bicycle.",
    "Tomatoes from my aunt's garden tasted of summer.",
    "Chess bored me until I lost to a child.",
    "My first coat was green wool, too big for me.",
    "The library closed at six on weekdays.",
)


async def _with_past(app: Sonality) -> None:
    await app.add_biography("ada", RELEVANT, importance=4, source=BiographySource.STATEMENT)
    for text in UNRELATED:
        await app.add_biography("ada", text, importance=3)


async def test_the_appraisal_and_the_formulation_hear_the_recalled_past(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Talker placement: the entry that matches the interpretation ("I send you message
    1.") is in the appraisal's prompt and the formulation's, among three at most."""
    await _with_past(app)
    await app.set_runtime("ada", affect="talker")
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    appraise = llm.calls_to("affect_appraise")[-1]
    past = appraise.variables["biography"]
    assert RELEVANT in past and RELEVANT in appraise.rendered.system
    assert len(past.splitlines()) == 3
    formulation = llm.calls_to("formulate")[-1]
    assert RELEVANT in formulation.variables["biography"]
    assert RELEVANT in formulation.rendered.system
    await app.drain("ada")


async def test_without_a_past_the_prompts_say_so(app: Sonality, llm: ScriptedLLM) -> None:
    """A persona without a biography: the appraisal reads a placeholder, the formulation
    gets no section at all."""
    await app.set_runtime("ada", affect="talker")
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    assert "nothing from my past" in llm.calls_to("affect_appraise")[-1].variables["biography"]
    assert llm.calls_to("formulate")[-1].variables["biography"] == ""
    await app.drain("ada")


async def test_in_the_thinker_only_the_appraisal_recalls_it(
    app: Sonality, llm: ScriptedLLM
) -> None:
    """Thinker placement: the stages run after the answer and their appraisal recalls the
    past; the Talker's own prompt (``talk``) does not carry it."""
    await _with_past(app)
    await app.set_runtime("ada", affect="thinker")
    await app.respond("ada", user_id="u1", conversation_id="c1", message=script.message(1))
    await app.drain("ada")
    assert RELEVANT in llm.calls_to("affect_appraise")[-1].variables["biography"]
    assert RELEVANT not in llm.calls_to("talk")[-1].rendered.system
