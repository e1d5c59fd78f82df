"""The Talker (MIRROR's "voice"): one model call that answers at once.

Its prompt (``prompts/talk.md``) holds the context block (core identity, snapshot, every
fact of the user, relevant beliefs and past episodes — recalled with the affect stages'
interpretation of the message when they run in the Talker, else with the message), the
Thinker's latest *committed* output — the conversation narrative (modes
``full``/``controller``) or the latest monologue threads (``threads``), framed as
retrospective background rather than an instruction about the new message — the affect
section when the persona has one, and the conversation window: system, first user message
and the newest 10, 6, 4 or 2 messages, whichever fits in 20k tokens
(``core.budget.conversation_window``). It never waits for the Thinker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sonality.core.budget import Message, conversation_window, remembered
from sonality.errors import LLMError
from sonality.llm.prompts import Prompt
from sonality.mind.affect import AffectStages, block, initial_state, self_model_text
from sonality.mind.context import ContextBuilder, order_facts
from sonality.models import (
    AffectPlacement,
    AffectState,
    Context,
    ConversationMind,
    Episode,
    RuntimeMode,
    TalkerReads,
)
from sonality.observability import get_logger
from sonality.ports import LLM, Clock, PromptSource, Store, StreamingLLM

__all__ = [
    "Heard",
    "Spoken",
    "Talker",
    "inner_state",
]

log = get_logger("sonality.talker")

_RECENT_EPISODES = 5
"""Episodes read for the window besides the first: the newest 10 messages need at most
the last five."""


@dataclass(frozen=True, slots=True)
class Heard:
    """What the Talker read before it speaks (:meth:`Talker.read`)."""

    reads: TalkerReads
    vector: Sequence[float]
    """The message's embedding the context was read with."""


@dataclass(frozen=True, slots=True)
class Spoken:
    text: str
    narrative_version: int
    affect: AffectState | None
    """A new affect state to store (Talker placement), or None."""
    talker_ms: float


def inner_state(mode: RuntimeMode, mind: ConversationMind) -> str:
    """The Thinker's committed output as the Talker sees it (empty in baseline)."""
    if mode is RuntimeMode.BASELINE:
        return ""
    if mode is RuntimeMode.THREADS:
        if not mind.monologue:
            return "## My latest inner thoughts\n(None yet: this conversation has just begun.)"
        e = mind.monologue[-1]
        return (
            f"## My latest inner thoughts (after turn {e.turn}; they look back on earlier "
            "turns and are not about the new message)\n"
            f"Reasoning: {e.reasoning}\nMemory: {e.memory}\nGoal: {e.goal}"
        )
    if mind.narrative is None:
        return "## My internal narrative\n(None yet: this conversation has just begun.)"
    n = mind.narrative
    return (
        f"## My internal narrative (v{n.version}, written after turn {n.turn}; it looks back "
        "on earlier turns and is not about the new message)\n"
        f"{n.text}"
    )


def _role_label(message: Message) -> str:
    return "User" if message.role == "user" else "Me"


class Talker:
    """Builds the Talker's prompt and calls the model (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        llm: LLM,
        clock: Clock,
        count: Callable[[str], int],
        contexts: ContextBuilder,
        affect: AffectStages,
        window_tokens: int,
        prompts: PromptSource,
    ) -> None:
        self._store = store
        self._llm = llm
        self._clock = clock
        self._count = remembered(count)  # the window's messages come back turn after turn
        self._contexts = contexts
        self._affect = affect
        self._window_tokens = window_tokens
        self._prompts = prompts

    async def read(
        self, persona_id: str, *, user_id: str, conversation_id: str, message: str
    ) -> Heard:
        """Everything the Talker needs before it speaks, in one read of the store
        (``Store.talker_reads``): persona and context, the conversation's Thinker state,
        its window and the affect state towards the user."""
        vector = await self._contexts.embed(message)
        reads = await self._store.talker_reads(
            persona_id,
            user_id,
            conversation_id,
            vector,
            **self._contexts.read_sizes(),
            window=_RECENT_EPISODES,
        )
        return Heard(reads=reads, vector=vector)

    async def speak(
        self,
        heard: Heard,
        *,
        user_id: str,
        message: str,
        mode: RuntimeMode,
        placement: AffectPlacement,
        before_turn: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Spoken:
        """The answer to ``message`` (``before_turn``: the turn it is stored as already,
        an exchange whose answer did not come in time: the history ends before it); with
        ``on_text``, each piece of it is passed there as the model writes it (when the
        model streams: else the whole reply at once)."""
        reads = heard.reads
        persona = reads.context.persona
        mind = reads.mind
        history = reads.window
        if before_turn is not None:
            history = tuple(e for e in history if e.turn < before_turn)
        spent = 0.0
        ctx: Context | None = None
        past = ""
        state: AffectState | None = None
        new_state: AffectState | None = None
        if placement is not AffectPlacement.OFF:
            stored = reads.affect
            state = stored or initial_state(persona.id, user_id, self._clock.now())
            if placement is AffectPlacement.TALKER:
                started = time.perf_counter()
                facts = order_facts(reads.context.facts)
                try:
                    felt = await self._affect.run(
                        persona,
                        state,
                        message=message,
                        reply=None,
                        previous_reply=history[-1].agent_response if history else None,
                        facts=facts,
                        now=self._clock.now(),
                        episode_id=None,
                    )
                except LLMError as exc:  # the answer matters more: speak with what is stored
                    log.warning("affect_skipped", persona_id=persona.id, error=type(exc).__name__)
                    state = stored
                else:
                    # the memories recalled with the interpretation are the Talker's too
                    state = new_state = felt.state
                    ctx = felt.context
                    past = felt.biography
                spent += time.perf_counter() - started
        if ctx is None:
            ctx = await self._contexts.assemble(
                reads.context, user_id=user_id, message=message, vector=heard.vector
            )
        background = ctx.as_prompt()
        inner = inner_state(mode, mind)
        # the formulation (seed 002) when the stages ran for this message; otherwise the
        # appraisal and plan at hand are the previous message's and stay out of the prompt
        prompt = Prompt.FORMULATE if new_state is not None else Prompt.TALK
        feelings = block(state, current=new_state is not None)
        self_model = self_model_text(persona.self_model)
        # the formulation hears the past the appraisal recalled (seed 002); talk.md does not
        past_block = f"What my own past brings back here:\n{past}" if past else ""
        transcript = self._transcript(
            history,
            message,
            [background, inner, feelings, self_model, past_block],
            prompt,
            background_tokens=ctx.tokens,
        )
        started = time.perf_counter()
        variables = {
            "persona_name": persona.name,
            "self_model": self_model,
            "background": background,
            "inner_state": inner,
            "affect": feelings,
            "biography": past_block,
            "conversation": transcript,
            "message": message,
        }
        if on_text is not None and isinstance(self._llm, StreamingLLM):
            pieces = []
            async for piece in self._llm.stream_text(prompt, variables, component="talker"):
                pieces.append(piece)
                on_text(piece)
            text = "".join(pieces)
        else:
            text = await self._llm.text(prompt, variables, component="talker")
            if on_text is not None:
                on_text(text)
        spent += time.perf_counter() - started
        return Spoken(
            text=text.strip(),
            narrative_version=mind.narrative_version,
            affect=new_state,
            talker_ms=round(spent * 1000, 1),
        )

    # the conversation window ---------------------------------------------------------

    def _transcript(
        self,
        history: Sequence[Episode],
        message: str,
        system: list[str],
        prompt: Prompt,
        *,
        background_tokens: int,
    ) -> str:
        """The window's earlier messages as text, gaps marked (the new message is apart).
        ``system[0]`` is the context block, counted already (``background_tokens``); the
        system part is counted as the sum of its parts."""
        messages: list[Message] = []
        position: dict[int, int] = {}
        for episode in history:
            asked = Message(role="user", content=episode.user_message)
            messages.append(asked)
            position[id(asked)] = 2 * episode.turn
            if episode.agent_response.strip():
                answered = Message(role="assistant", content=episode.agent_response)
                messages.append(answered)
                position[id(answered)] = 2 * episode.turn + 1
        new = Message(role="user", content=message)
        messages.append(new)
        position[id(new)] = 2 * (history[-1].turn + 1 if history else 1)
        fixed = self._prompts.fixed_text(prompt)
        joined = "\n".join([fixed, *system])
        prompt_tokens = (
            self._count(fixed)
            + background_tokens
            + sum(self._count(part) for part in system[1:])
            + len(system)  # the newlines joining them
        )

        def count(text: str) -> int:  # the ladder counts the same messages again and again
            return prompt_tokens if text == joined else self._count(text)

        window = conversation_window(joined, messages, count=count, budget=self._window_tokens)
        shown = [m for m in window if m.role != "system" and m is not new]
        if not shown:
            return "(This is the start of our conversation.)"
        lines = ["Our conversation so far (oldest first):"]
        previous: int | None = None
        for m in shown:
            at = position[id(m)]
            if previous is not None and at - previous > 1:
                lines.append("[… earlier messages left out …]")
            lines.append(f"{_role_label(m)}: {m.content}")
            previous = at
        if shown and position[id(new)] - position[id(shown[-1])] > 1:
            lines.append("[… earlier messages left out …]")
        return "\n\n".join(lines)
