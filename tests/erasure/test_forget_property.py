"""The property issue 24 asks for, on both stores, over random histories: after
``forget_user``, the persona is the persona that never met the user.

A history interleaves three users' recorded exchanges (some with facts), ``respond`` turns
(Talker and Thinker), forced reflections with decay reviews, under a random snapshot
retention; then u1 is forgotten, and a few more turns and a reflection follow. The same
history without u1 is played into a reference persona, whose (scripted) reviewer is told
to retain the topics u1 had named before each reflection: the advice ``core.erasure``'s
rule says depended on u1, written here from the rule's text (a topic u1's exchanges named
before the reflection), not from the code. The reference's reviewer is also given no
verdict the real run's reviewer was not given at the same reflection: a verdict is the
model's, an input the erasure keeps or drops but cannot ask for again. (Found by this
property: u1's turns delay when a staged update on tea commits, so in the real run tea
went stale and was judged FORGET at an earlier reflection and was never shown to a later
one; after the erasure, tea is fresh at that earlier reflection, so the verdict does not
apply there, and no later verdict exists. The persona keeps tea, arithmetically decayed,
until its next review judges it; a persona that never met u1 was judged at that later
reflection. This is the rule's documented limit, not checked away: the reference is held
to the same judgements.)

Checked after the forget, and again after the turns that follow it:

* the rule-derived state (beliefs with their opinion state and evidence, staged updates,
  counters, episodes, facts, insights) equals the reference's;
* the snapshot is a version written before any reflection read u1 (or the core identity),
  and every stored version and every later rewrite holds none of u1's words;
* every other user's context holds none of u1's words;
* no request the model receives after the forget holds them.

Examples per store: ``SONALITY_FORGET_EXAMPLES`` (6 by default, so the suite stays fast;
set it to 200 for a long run).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sonality.core.decay import DecayParams
from sonality.core.reflection import ReflectionParams
from sonality.llm.embedders import HashEmbedder
from sonality.mind.parts import Limits
from sonality.service import Sonality
from sonality.testing import FrozenClock, ScriptedLLM
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.erasure.conftest import opinion_state
from tests.erasure.scripted import Script, message, scripted, sent, token

IDENTITY = (
    "I am Ada, a patient listener who follows evidence rather than pressure and who keeps "
    "track of what each person told me."
)
USERS = ("u1", "u2", "u3")
TOPICS = ("tea", "coffee", "jazz", "wine")
EXAMPLES = int(os.environ.get("SONALITY_FORGET_EXAMPLES", "6"))
_PERSONAS = itertools.count(1)


@dataclass(frozen=True)
class Op:
    kind: str
    """``say`` (record), ``respond`` or ``reflect``."""
    user: str = ""
    topic: str = ""
    direction: str = ""
    fact: bool = False


def _turn(kind: str, user: str) -> st.SearchStrategy[Op]:
    """A turn of ``user``: u1 talks about tea and jazz only, so the reviews' advice on
    coffee (DECAY) and wine (FORGET) never depends on u1 and advice on tea may."""
    return st.builds(
        Op,
        kind=st.just(kind),
        user=st.just(user),
        topic=st.sampled_from(("tea", "jazz") if user == "u1" else TOPICS),
        direction=st.sampled_from(("supports", "opposes", "neutral")),
        fact=st.booleans() if kind == "say" else st.just(False),
    )


def _with_u1(drawn: tuple[list[Op], Op, int]) -> list[Op]:
    """The history with one more u1 turn at a drawn place: u1 always said something."""
    ops, turn, at = drawn
    return [*ops[: at % (len(ops) + 1)], turn, *ops[at % (len(ops) + 1) :]]


OPS = st.tuples(
    st.lists(
        st.one_of(
            *(_turn("say", user) for user in USERS),
            *(_turn("say", user) for user in ("u2", "u3")),
            st.sampled_from(USERS).flatmap(lambda user: _turn("respond", user)),
            st.just(Op("reflect")),
        ),
        min_size=3,
        max_size=15,
    ),
    _turn("say", "u1"),
    st.integers(min_value=0, max_value=15),
).map(_with_u1)

AFTER = [
    Op("say", "u2", "tea", "supports", fact=True),
    Op("respond", "u3", "coffee", "opposes"),
    Op("say", "u2", "jazz", "supports"),
    Op("reflect"),
]
"""What follows the forget, in both personas."""


@dataclass
class Run:
    """One persona's history played through its own facade and scripted model."""

    app: Sonality
    llm: ScriptedLLM
    script: Script
    persona: str
    clock: FrozenClock
    said: list[tuple[int, str, str]] = field(default_factory=list)
    """(number, user, topic) of every exchange so far."""
    judged: list[dict[str, str]] = field(default_factory=list)
    """For a reference run: the real run's verdicts, one mapping per reflection in order."""

    async def play(self, ops: list[Op], first: int, *, without: str | None = None) -> None:
        for n, op in enumerate(ops, first):
            if op.kind == "reflect":
                await self.reflect(without)
            elif op.user == without:
                self.said.append((n, op.user, op.topic))  # said in the history, not here
            else:
                await self.turn(n, op)

    async def turn(self, n: int, op: Op) -> None:
        self.clock.advance(minutes=1)
        fact = f"likes {op.topic} ([{op.user}:{n}] said so)" if op.fact else None
        said = message(op.user, n, op.topic, op.direction, fact)
        if op.kind == "say":
            await self.app.record(
                self.persona,
                user_id=op.user,
                conversation_id=f"{op.user}-say",
                message=said,
                response="Noted.",
                episode_id=f"e{n}",
            )
        else:
            await self.app.respond(
                self.persona,
                user_id=op.user,
                conversation_id=f"{op.user}-talk",
                message=said,
                episode_id=f"e{n}",
            )
            await self.app.drain(self.persona, everywhere=True)
        await self.app.enrich_pending(self.persona)
        self.said.append((n, op.user, op.topic))

    async def reflect(self, without: str | None) -> None:
        """A forced reflection; a reference (``without`` the forgotten user) is told to
        retain the topics the forgotten user had named by now, and is given no verdict
        the real run's reviewer did not give at the same reflection (``judged``)."""
        if without is not None:
            self.script.blocked = {t for _, u, t in self.said if u == without}
            self.script.judged = self.judged.pop(0) if self.judged else {}
        self.clock.advance(minutes=1)
        report = await self.app.reflect(self.persona, force=True)
        assert report.outcome == "committed", report
        self.script.blocked = set()
        self.script.judged = None


def _run(store: Any, clock: FrozenClock, persona: str, retention: int) -> Run:
    script = Script()
    llm = scripted(script)
    app = Sonality(
        store=store,
        llm=llm,
        embedder=HashEmbedder(EMBEDDING_DIMENSIONS),
        clock=clock,
        count_tokens=lambda text: max(1, len(text) // 4),
        limits=Limits(record_deadline_seconds=600),
        reflection=ReflectionParams(snapshot_retention=retention, decay=DecayParams(min_gap=2)),
    )
    return Run(app=app, llm=llm, script=script, persona=persona, clock=clock)


async def _no_trace(full: Run, start: int) -> None:
    """Nothing served or sent since call ``start`` holds u1's words."""
    u1 = token("u1")
    for user in ("u2", "u3"):
        if await full.app.episodes(full.persona, user_id=user, limit=1):
            context = await full.app.context(full.persona, user_id=user, message="Remind me?")
            assert u1 not in context.as_prompt()
    assert all(u1 not in s.text for s in await full.app.snapshots(full.persona))
    assert u1 not in sent(full.llm, start)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
    ],
)
@given(ops=OPS, retention=st.sampled_from([0, 1, 2]))
async def test_a_persona_that_forgot_a_user_is_one_that_never_met_them(
    store: Any, t0: Any, ops: list[Op], retention: int
) -> None:
    """See the module docstring."""
    n = next(_PERSONAS)
    clock = FrozenClock(t0)
    full = _run(store, clock, f"full{n}", retention)
    ref = _run(store, clock, f"ref{n}", retention)
    for run in (full, ref):
        await run.app.create_persona(run.persona, name="Ada", core_identity=IDENTITY)

    clean = {IDENTITY}
    u1_read = False  # has a reflection read u1 yet?
    for i, op in enumerate(ops, 1):
        if op.kind == "reflect" and any(u == "u1" for _, u, _ in full.said):
            u1_read = True
        await full.play([op], i)
        if not u1_read:
            clean |= {s.text for s in await full.app.snapshots(full.persona)}
    reflections = sorted(
        await full.app.store.list_reflections(full.persona), key=lambda r: r.started_at
    )
    ref.judged = [dict(reversed(a.split(":", 1)) for a in r.advice) for r in reflections]
    await ref.play(ops, 1, without="u1")

    advised = [r.advice for r in await full.app.store.list_reflections(full.persona)]
    event(f"advice given: {any(advised)}")
    start = len(full.llm.calls)
    record = await full.app.forget_user(full.persona, user_id="u1")
    event(f"snapshot reverted: {record.review_from_version is not None}")
    kept = [r.advice for r in await full.app.store.list_reflections(full.persona)]
    event(f"advice dropped: {kept != advised}, advice kept: {any(kept)}")
    assert record.episodes == sum(op.user == "u1" for op in ops)
    assert await opinion_state(full.app, full.persona) == await opinion_state(ref.app, ref.persona)
    assert (await full.app.snapshot(full.persona)).text in clean
    await _no_trace(full, start)

    await full.play(AFTER, len(ops) + 1)
    await ref.play(AFTER, len(ops) + 1)
    assert await opinion_state(full.app, full.persona) == await opinion_state(ref.app, ref.persona)
    await _no_trace(full, start)
