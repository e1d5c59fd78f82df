"""The one-shot `sonality record`: the exchange is stored first, then one in-order pass
enriches the persona's backlog, so every model step is called once per episode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.testing import ScriptedLLM
from tests.cli import plugins
from tests.conftest import EMBEDDING_DIMENSIONS


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'record.db'}",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "CRITICAL",
        "SONALITY_MODEL": "",
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
    }


@pytest.fixture(autouse=True)
def _fresh_models() -> Iterator[None]:
    plugins.BUILT.clear()
    yield
    plugins.BUILT.clear()


def record(env: dict[str, str], turn: int, *llm: str) -> tuple[int, str, str]:
    args = ["record", "--persona", "ada", "--user", "u1", "--conversation", "c1"]
    args += ["--message", f"[turn {turn}] my argument", "--response", f"reply {turn}"]
    args += ["--id", f"e{turn}", "--json", *llm]
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def model() -> ScriptedLLM:
    assert len(plugins.BUILT) == 1
    return plugins.BUILT[0]


def statuses(env: dict[str, str]) -> list[tuple[str, str]]:
    result = CliRunner().invoke(main, ["episodes", "--persona", "ada", "--json"], env=env)
    assert result.exit_code == 0, result.output
    return sorted((e["id"], e["enrichment_status"]) for e in json.loads(result.stdout))


def seed(env: dict[str, str]) -> None:
    """Persona ada and two exchanges recorded without a model (pending)."""
    args = ["persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada."]
    assert CliRunner().invoke(main, args, env=env).exit_code == 0
    for turn in (1, 2):
        assert record(env, turn)[0] == 0


def test_record_enriches_the_backlog_in_order_calling_each_step_once(
    either_env: dict[str, str],
) -> None:
    """With a backlog of two pending episodes, `record` stores the third and enriches all
    three oldest first: one evidence and one insight call per episode, no call twice."""
    seed(either_env)
    code, out, err = record(either_env, 3, "--llm", "tests.cli.plugins:scripted")
    assert code == 0, err
    assert json.loads(out)["episode"]["enrichment_status"] == "enriched"
    evidence = [c.variables["user_message"] for c in model().calls_to("assess_evidence")]
    assert evidence == [f"[turn {i}] my argument" for i in (1, 2, 3)]
    assert len(model().calls_to("extract_insight")) == 3 and len(model().calls) == 6
    assert statuses(either_env) == [("e1", "enriched"), ("e2", "enriched"), ("e3", "enriched")]


def test_an_outage_costs_one_call_and_leaves_the_episodes_pending(
    either_env: dict[str, str],
) -> None:
    """During an outage `record` stores the exchange, calls the model once (the oldest
    pending episode's evidence step, which stops the pass), exits 0 and leaves every
    episode pending; it does not call again for the episode it just stored."""
    seed(either_env)
    code, out, err = record(either_env, 3, "--llm", "tests.cli.plugins:down")
    assert code == 0, err
    assert [c.prompt for c in model().calls] == ["assess_evidence"]
    assert json.loads(out)["episode"]["enrichment_status"] == "pending"
    assert json.loads(out)["enrichment"]["stopped_by"] == "llm_unavailable"
    assert statuses(either_env) == [("e1", "pending"), ("e2", "pending"), ("e3", "pending")]


def test_a_refused_configuration_exits_3_after_one_call(env: dict[str, str]) -> None:
    """A model refusing the configuration makes `record` exit 3 with one line naming the
    stored episode, after a single call; the episode waits as pending."""
    seed(env)
    code, out, err = record(env, 3, "--llm", "tests.cli.plugins:refusing")
    assert (code, out) == (3, "")
    assert err.startswith("error: invalid api key") and "episode_id='e3'" in err
    assert len(err.strip().splitlines()) == 1
    assert [c.prompt for c in model().calls] == ["assess_evidence"]
    assert statuses(env) == [("e1", "pending"), ("e2", "pending"), ("e3", "pending")]


def test_an_alone_pending_episode_is_enriched_with_one_call_per_step(
    env: dict[str, str],
) -> None:
    """Without a backlog, `record` enriches the new episode with exactly one evidence and
    one insight call (the inline attempt and a second pass never both run)."""
    seed(env)
    assert record(env, 1, "--llm", "tests.cli.plugins:scripted")[0] == 0  # catches up 1, 2
    plugins.BUILT.clear()
    code, out, err = record(env, 3, "--llm", "tests.cli.plugins:scripted")
    assert code == 0, err
    assert [c.prompt for c in model().calls] == ["assess_evidence", "extract_insight"]
    assert json.loads(out)["episode"]["enrichment_status"] == "enriched"


def pending(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["pending", *args], env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_pending_counts_what_waits_for_a_model(either_env: dict[str, str]) -> None:
    """`pending` shows per persona the episodes not enriched, the insights to retry and the
    turns to think about: two exchanges recorded without a model wait for enrichment; an
    insight outage leaves their insights waiting; a working model clears both. An unknown
    persona exits 4."""
    seed(either_env)
    code, out, _ = pending(either_env, "--json")
    assert code == 0
    assert json.loads(out) == [
        {
            "persona_id": "ada",
            "enrichment_pending": 2,
            "enrichment_failed": 0,
            "insights_pending": 0,
            "insights_failed": 0,
            "thinking_pending": 0,
            "thinking_failed": 0,
        }
    ]
    enrich = ["enrich", "--persona", "ada", "--llm", "tests.cli.plugins:insight_down"]
    assert CliRunner().invoke(main, enrich, env=either_env).exit_code == 8
    code, out, _ = pending(either_env, "--persona", "ada")
    assert (code, out) == (
        0,
        "ada: enrichment 0 pending, 0 failed; insights 2 pending, 0 failed; "
        "thinking 0 pending, 0 failed\n",
    )
    enrich[-1] = "tests.cli.plugins:scripted"
    assert CliRunner().invoke(main, enrich, env=either_env).exit_code == 0
    assert pending(either_env) == (0, "ada: nothing pending\n", "")
    code, _, err = pending(either_env, "--persona", "nobody")
    assert code == 4 and err.startswith("error: no such persona")
