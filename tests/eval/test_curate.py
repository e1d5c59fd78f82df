"""``sonality eval curate`` on both stores with a scripted persona and a scripted judge."""

from __future__ import annotations

from typing import Any

import pytest

from sonality.eval import curate
from sonality.eval.datasets import load_curate
from sonality.eval.judge import Judge
from sonality.eval.runner import run_units
from sonality.service import Sonality
from sonality.testing import ScriptedLLM
from tests.eval import fakes


def test_dialogues_follow_the_scenarios() -> None:
    """Scenario 1 has no other people, 2-4 add 1-3 conflicting ones from the case, 5 adds
    three non-conflicting ones from the pool; every mode sees the same dialogue."""
    data = load_curate()
    units = curate.build_units(data, curate.CurateOptions(limit=2, distractors=3))
    assert len(units) == 2 * 5 * 5
    case = data.cases[0]
    by_scenario = {u.scenario: u for u in units if u.case.id == case.id and u.mode == "full"}
    kinds = {s: [t.kind for t in u.turns] for s, u in by_scenario.items()}
    assert kinds[1] == ["disclosure", "distractor", "distractor", "distractor", "question"]
    for s in (2, 3, 4):
        assert by_scenario[s].others == case.conflicting[: s - 1]
        assert kinds[s].count("preference") == s - 1
    assert len(by_scenario[5].others) == 3
    assert set(by_scenario[5].others) <= set(data.preferences)
    assert by_scenario[1].question == case.question_user_only
    assert by_scenario[4].question == case.question_group
    assert by_scenario[1].turns[0].text.startswith(case.user_constraint)
    same = [u.turns for u in units if u.case.id == case.id and u.scenario == 3]
    assert len(same) == 5 and all(t == same[0] for t in same)


def test_dialogues_are_reproducible_from_the_seed() -> None:
    """The same seed draws the same distractors; another seed draws others; --biased asks
    the leading variant."""
    data = load_curate()
    case = data.cases[5]
    one = curate.dialogue(case, 5, data, seed=1, distractors=3, biased=False)
    again = curate.dialogue(case, 5, data, seed=1, distractors=3, biased=False)
    other = curate.dialogue(case, 5, data, seed=2, distractors=3, biased=False)
    biased = curate.dialogue(case, 5, data, seed=1, distractors=3, biased=True)
    assert one == again
    assert one != other
    assert biased[0][-1].text == case.biased_question_group
    assert biased[0][:-1] == one[0][:-1]


async def _run(app: Sonality, judge: Judge, options: curate.CurateOptions) -> Any:
    units = curate.build_units(load_curate(), options)
    return await run_units(
        units,
        key=lambda u: u.key,
        work=lambda u: curate.run_dialogue(app, judge, u, affect=options.affect),
        label="curate",
        concurrency=8,
    )


async def test_curate_tables_match_the_judge(app: Sonality, judge: Judge) -> None:
    """A judge that passes baseline answers in scenario 1 only, threads in 1-2,
    controller in 1-3 and full in 1-5 yields exactly those pass rates, gains and
    synergy, through the real respond/drain path on both stores."""
    options = curate.CurateOptions(limit=1, distractors=0)
    outcome = await _run(app, judge, options)
    assert outcome.failed == [] and len(outcome.records) == 25
    tables = curate.compute_tables(outcome.records, options)
    for s in "12345":
        for mode, up_to in fakes.PASS_UP_TO.items():
            rate = tables.pass_rates[s][mode]
            assert (rate.passed, rate.total) == (int(int(s) <= up_to), 1), (s, mode)
    average = {m: tables.pass_rates["all"][m].rate for m in curate.MODES}
    assert average == {
        "bare": 0.2,
        "baseline": 0.2,
        "threads": 0.4,
        "controller": 0.6,
        "full": 1.0,
    }
    gains = {m: tables.gains["all"][m].gain for m in ("threads", "controller", "full")}
    assert gains == pytest.approx({"threads": 1.0, "controller": 2.0, "full": 4.0})
    over_bare = {m: g.gain for m, g in tables.gains_over_bare["all"].items()}
    assert over_bare == pytest.approx(
        {"baseline": 0.0, "threads": 1.0, "controller": 2.0, "full": 4.0}
    )
    rendered = curate.render(tables)
    assert "Relative gain over bare, the model alone" in rendered
    assert "Relative gain over baseline, Sonality's Talker alone" in rendered
    assert tables.synergy["all"] == pytest.approx(0.4)
    assert tables.synergy["1"] == pytest.approx(0.0)
    [category] = tables.categories.values()
    assert category["full"].rate == 1.0 and category["baseline"].rate == 0.2


async def test_turns_go_through_the_dual_process_path(app: Sonality, judge: Judge) -> None:
    """Each turn is answered by respond and the Thinker finishes before the next message:
    with the controller on, turn k answers with the narrative written after turn k-1;
    every mode's calls are booked per component."""
    options = curate.CurateOptions(
        limit=1, scenarios=(4,), distractors=2, modes=("baseline", "threads", "controller", "full")
    )
    outcome = await _run(app, judge, options)
    by_mode = {r["mode"]: r for r in outcome.records}
    for mode in ("controller", "full"):
        used = [t["narrative_version_used"] for t in by_mode[mode]["turns"]]
        assert used == list(range(len(used))), mode
    assert all(t["narrative_version_used"] == 0 for t in by_mode["baseline"]["turns"])
    turns = len(by_mode["full"]["turns"])
    assert turns == 1 + 2 + 3 + 1
    calls = {m: r["usage"]["by_component"] for m, r in by_mode.items()}
    assert calls["baseline"] == {"enrichment": 2 * turns, "talker": turns}
    assert calls["threads"] == {"enrichment": 2 * turns, "monologue": turns, "talker": turns}
    assert calls["controller"] == {"controller": turns, "enrichment": 2 * turns, "talker": turns}
    assert calls["full"] == {
        "controller": turns,
        "enrichment": 2 * turns,
        "monologue": turns,
        "talker": turns,
    }
    assert {r["answer"].split("]")[0] for r in outcome.records} == {
        "[baseline",
        "[threads",
        "[controller",
        "[full",
    }
    personas = {r["persona_id"] for r in outcome.records}
    assert len(personas) == 4  # a fresh persona per dialogue
    episodes = await app.episodes(by_mode["full"]["persona_id"], limit=50)
    assert [e.user_message for e in reversed(episodes)] == [
        t["message"] for t in by_mode["full"]["turns"]
    ]


async def test_affect_runs_when_asked(app: Sonality, judge: Judge) -> None:
    """With affect on, every turn also makes the two affect calls."""
    options = curate.CurateOptions(
        limit=1, scenarios=(1,), modes=("baseline",), distractors=1, affect="talker"
    )
    outcome = await _run(app, judge, options)
    [record] = outcome.records
    assert record["affect"] == "talker"
    assert record["usage"]["by_component"]["affect"] == 2 * len(record["turns"])


async def test_bare_is_the_model_alone_with_the_conversation(
    app: Sonality, judge: Judge, store: Any
) -> None:
    """Mode ``bare`` (MIRROR's baseline): one ``bare`` call per message, with the
    conversation so far and nothing of Sonality's — no context block, no facts, no
    enrichment or Thinker call, no persona or episode stored — while ``baseline`` in the
    same run has Sonality's context in its Talker prompt."""
    options = curate.CurateOptions(
        limit=1, scenarios=(2,), distractors=1, modes=("bare", "baseline")
    )
    llm = app.llm
    assert isinstance(llm, ScriptedLLM)
    before = len(await store.list_personas())
    outcome = await _run(app, judge, options)
    bare = next(r for r in outcome.records if r["mode"] == "bare")
    assert bare["persona_id"] is None and bare["answer"].startswith("[bare]")
    assert bare["usage"]["by_component"] == {"talker": len(bare["turns"])}
    calls = llm.calls_to("bare")
    assert len(calls) == len(bare["turns"]) == 4
    constraint = bare["constraint"]
    for n, call in enumerate(calls):
        prompt = (call.rendered.system or "") + call.rendered.user
        assert "never forget" not in prompt and "##" not in prompt
        assert prompt.count(constraint) == 1, n  # the disclosure, then the transcript
    assert len(await store.list_personas()) == before + 1  # baseline's persona only
    talked = llm.calls_to("talk")
    assert talked and all("## Who you are" in (c.rendered.system or "") for c in talked)
