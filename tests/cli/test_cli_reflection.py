"""`sonality reflect`, `reflections`, `snapshot history|show|rollback` and `worker --once`
end to end through click's runner, on SQLite and on Neo4j, with the scripted model plugged
in through `--llm`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.config import Settings
from sonality.service import Sonality
from tests.conftest import EMBEDDING_DIMENSIONS
from tests.reflection.conftest import IDENTITY, SNAPSHOT
from tests.reflection.fake_models import scripted_llm

LLM = ["--llm", "tests.reflection.fake_models:scripted_reflection_llm"]


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def env(request: pytest.FixtureRequest, tmp_path: Any) -> dict[str, str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'cli.db'}"
    else:
        request.getfixturevalue("neo4j_store")  # migrated and emptied
        url = request.getfixturevalue("neo4j_uri")
    return {
        "SONALITY_STORE": url,
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "WARNING",
        "SONALITY_MODEL": "",
    }


def seed(env: dict[str, str], personas: dict[str, int]) -> None:
    """Create personas with a number of recorded (enriched) scripted turns each."""
    from tests.pipeline import scripts

    async def body() -> None:
        settings = Settings(store=env["SONALITY_STORE"], embedding_dimensions=EMBEDDING_DIMENSIONS)
        app = await Sonality.open(settings, llm=scripted_llm())
        try:
            for pid, turns in personas.items():
                await app.create_persona(pid, name=pid, core_identity=IDENTITY, snapshot=SNAPSHOT)
                for i in range(1, turns + 1):
                    t = scripts.turn(i)
                    await app.record(
                        pid,
                        user_id="u1",
                        conversation_id="c1",
                        message=t.message,
                        response=t.response,
                    )
        finally:
            await app.close()

    asyncio.run(body())


def invoke(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_reflect_reports_trigger_outcome_diff_and_health(env: dict[str, str]) -> None:
    """Not due: skipped (cooldown). Dry run: accepted, nothing written. Due: committed,
    with trigger, version, word diff, decay and health; --json has the contract keys."""
    seed(env, {"ada": 4})
    code, out, _ = invoke(env, "reflect", "--persona", "ada", "--json", *LLM)
    assert code == 0
    skipped = json.loads(out)
    assert (skipped["outcome"], skipped["trigger"]) == ("skipped", "cooldown")
    code, out, _ = invoke(env, "reflect", "--persona", "ada", "--dry-run", "--json", *LLM)
    skipped_dry = json.loads(out)  # a skipped dry run still says it was one
    assert code == 0 and (skipped_dry["outcome"], skipped_dry["dry_run"]) == ("skipped", True)
    code, out, err = invoke(env, "reflect", "--persona", "ada", "--force", "--dry-run")
    assert code == 3, (out, err)  # no model configured: a configuration error

    code, out, _ = invoke(
        env, "reflect", "--persona", "ada", "--force", "--dry-run", "--json", *LLM
    )
    dry = json.loads(out)
    assert code == 0 and (dry["outcome"], dry["dry_run"], dry["snapshot_version"]) == (
        "accepted",
        True,
        1,
    )
    code, out, _ = invoke(env, "snapshot", "history", "--persona", "ada", "--json")
    assert [s["version"] for s in json.loads(out)] == [1]

    code, out, _ = invoke(env, "reflect", "--persona", "ada", "--force", *LLM)
    assert code == 0, out
    assert "ada: committed, trigger manual" in out
    assert "snapshot v1 -> v2" in out and "{+Looking back" in out
    assert "beliefs decayed:" in out and "llm calls 1" in out

    code, out, _ = invoke(env, "reflect", "--persona", "ada", "--force", "--json", *LLM)
    data = json.loads(out)
    assert {"outcome", "trigger", "snapshot_version", "health", "diff"} <= data.keys()
    assert (data["outcome"], data["trigger"]) == ("committed", "manual")


def test_a_rejected_reflection_exits_1(env: dict[str, str]) -> None:
    """A too-short reply is rejected: exit 1, reason shown, snapshot unchanged."""
    seed(env, {"ada": 21})
    rejecting = env | {"SONALITY_TEST_REFLECT_REPLY": "Too short."}
    code, out, _ = invoke(rejecting, "reflect", "--persona", "ada", *LLM)
    assert code == 1 and "ada: rejected, trigger periodic: too_short" in out
    code, out, _ = invoke(env, "reflections", "--persona", "ada", "--json")
    [stored] = json.loads(out)
    assert (stored["outcome"], stored["reason"]) == ("rejected", "too_short")
    code, out, _ = invoke(env, "snapshot", "show", "--persona", "ada")
    assert code == 0 and out.startswith("v1 (initial")


def test_reflect_all_with_progress(env: dict[str, str]) -> None:
    """--all reflects every persona in turn (progress on stderr) and reports each."""
    seed(env, {"ada": 21, "bob": 3})
    code, out, err = invoke(env, "reflect", "--all", "--json", *LLM)
    assert code == 0
    outcomes = {r["persona_id"]: r["outcome"] for r in json.loads(out)}
    assert outcomes == {"ada": "committed", "bob": "skipped"}
    assert "reflecting" in err
    code, _, _ = invoke(env, "reflect", *LLM)
    assert code == 2  # neither --persona nor --all


def test_snapshot_history_show_and_rollback(env: dict[str, str]) -> None:
    """history lists versions newest first; show prints one; rollback adds rollback:N."""
    seed(env, {"ada": 21})
    assert invoke(env, "reflect", "--persona", "ada", *LLM)[0] == 0
    code, out, _ = invoke(env, "snapshot", "rollback", "--persona", "ada", "--to", "1")
    assert code == 0 and "v3 now carries the text of v1" in out
    code, out, _ = invoke(env, "snapshot", "history", "--persona", "ada", "--json")
    history = json.loads(out)
    assert [(s["version"], s["reason"]) for s in history] == [
        (3, "rollback:1"),
        (2, "reflection"),
        (1, "initial"),
    ]
    code, out, _ = invoke(env, "snapshot", "show", "--persona", "ada", "--version", "2")
    assert code == 0 and out.startswith("v2 (reflection") and "Looking back" in out
    code, out, _ = invoke(env, "snapshot", "show", "--persona", "ada", "--version", "9")
    assert code == 4
    code, out, _ = invoke(env, "snapshot", "history", "--persona", "ada")
    assert out.splitlines()[0].startswith("v3")


def test_worker_once_reflects_due_personas(env: dict[str, str]) -> None:
    """`worker --once` enriches pending episodes and reflects every due persona, then exits."""
    seed(env, {"ada": 21, "bob": 2})
    code, out, _ = invoke(env, "worker", "--once", "--json", *LLM)
    assert code == 0
    assert json.loads(out) == [
        {
            "persona_id": "ada",
            "outcome": "committed",
            "trigger": "periodic",
            "reason": None,
            "snapshot_version": 2,
        }
    ]
    code, out, _ = invoke(env, "worker", "--once", *LLM)
    assert code == 0 and "nothing due" in out
