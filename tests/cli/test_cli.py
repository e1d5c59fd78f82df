"""The CLI end to end through click's runner, on a real SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonality.cli import main
from tests.cli.surface import EXPECTED


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'cli.db'}",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "WARNING",
        "SONALITY_MODEL": "",
    }


def invoke(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_help_does_not_import_litellm() -> None:
    """`sonality --help`, and every command's and subcommand's `--help`, print usage without
    importing litellm, the Neo4j driver, APScheduler or the server's web stack and MCP SDK."""
    code = (
        "import sys, click\n"
        "from sonality.cli import main\n"
        "def paths(group, prefix):\n"
        "    ctx = click.Context(group)\n"
        "    for name in group.list_commands(ctx):\n"
        "        cmd = group.get_command(ctx, name)\n"
        "        yield [*prefix, name]\n"
        "        if isinstance(cmd, click.Group):\n"
        "            yield from paths(cmd, [*prefix, name])\n"
        "seen = []\n"
        "for path in [[], *paths(main, [])]:\n"
        "    try:\n        main([*path, '--help'], prog_name='sonality')\n"
        "    except SystemExit as exc:\n        assert exc.code == 0, (path, exc.code)\n"
        "    seen.append(' '.join(path))\n"
        "heavy = sorted(m for m in ('litellm', 'neo4j', 'apscheduler', 'fastapi', 'starlette',"
        " 'uvicorn', 'mcp', 'sonality.server') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "print('helped:', len(seen), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "migrate" in out.stdout and "persona" in out.stdout
    assert "Usage: sonality snapshot rollback [OPTIONS]" in out.stdout
    commands = [line for line in EXPECTED.read_text("utf-8").splitlines() if line[:1] != " "]
    assert f"helped: {len(commands)}" in out.stderr  # the root and every (sub)command


def test_version(env: dict[str, str]) -> None:
    """`--version` prints the package version."""
    code, out, _ = invoke(env, "--version")
    assert code == 0 and "0.1.0" in out


def test_persona_lifecycle(env: dict[str, str], tmp_path: Path) -> None:
    """create, list and show a persona, in text and JSON."""
    identity = tmp_path / "id.md"
    identity.write_text("I am Ada. Évidence first.", encoding="utf-8")
    code, out, _ = invoke(
        env, "persona", "create", "ada", "--name", "Ada", "--identity-file", str(identity)
    )
    assert code == 0 and "created ada" in out
    code, out, _ = invoke(env, "persona", "list", "--json")
    assert code == 0 and [p["id"] for p in json.loads(out)] == ["ada"]
    code, out, _ = invoke(env, "persona", "show", "ada", "--json")
    data = json.loads(out)
    assert (
        data["snapshot"]["version"] == 1
        and data["persona"]["core_identity"] == "I am Ada. Évidence first."
    )


def test_errors_map_to_exit_codes(env: dict[str, str]) -> None:
    """Known errors print one line (no traceback) with their kind's exit code."""
    code, _, err = invoke(env, "persona", "show", "ghost")
    assert code == 4 and err.startswith("error:") and "Traceback" not in err
    invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "x")
    code, _, err = invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "x")
    assert code == 5 and "error:" in err
    code, _, err = invoke(
        env, "record", "--persona", "ada", "--user", "bad user", "--message", "m", "--response", "r"
    )
    assert code == 2 and "user_id" in err
    code, _, err = invoke({**env, "SONALITY_STORE": "mysql://nope"}, "persona", "list")
    assert code == 3 and "SONALITY_STORE" in err


def test_record_context_and_reads_without_a_model(env: dict[str, str]) -> None:
    """Without a model, record stores a pending episode and the reads show it."""
    invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    code, out, _ = invoke(
        env,
        "record",
        "--persona",
        "ada",
        "--user",
        "u1",
        "--message",
        "I love tea",
        "--response",
        "Noted",
        "--id",
        "e1",
        "--json",
    )
    assert code == 0 and json.loads(out)["episode"]["enrichment_status"] == "pending"
    code, out, _ = invoke(
        env,
        "record",
        "--persona",
        "ada",
        "--user",
        "u1",
        "--message",
        "I love tea",
        "--response",
        "Noted",
        "--id",
        "e1",
    )
    assert code == 0 and "already stored" in out
    code, out, _ = invoke(env, "episodes", "--persona", "ada", "--json")
    assert [e["id"] for e in json.loads(out)] == ["e1"]
    code, out, _ = invoke(env, "context", "--persona", "ada", "--user", "u1", "--message", "tea?")
    assert code == 0 and "I am Ada." in out and "I love tea" in out
    code, out, _ = invoke(env, "enrich", "--persona", "ada")
    assert code == 0 and "pending 1" in out and "SONALITY_MODEL" in out
    code, out, _ = invoke(env, "doctor", "--json")
    report = json.loads(out)
    assert report["episodes"]["ada"]["pending"] == 1 and report["model"]["configured"] is False


def test_ingest_is_resumable_and_reports_bad_lines(env: dict[str, str], tmp_path: Path) -> None:
    """Good lines are kept, bad ones reported by number, and a re-run stores nothing new."""
    invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    lines = [
        json.dumps({"message": "one", "response": "1"}),
        "{not json",
        json.dumps({"response": "no message"}),
        json.dumps({"message": "two", "response": "2", "user_id": "u2"}),
    ]
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = invoke(env, "ingest", str(path), "--persona", "ada")
    assert code == 2
    assert "line 2:" in err and "line 3:" in err and "stored 2" in out
    code, out, _ = invoke(env, "ingest", str(path), "--persona", "ada", "--json")
    data = json.loads(out)
    assert (data["stored"], data["already_stored"]) == (0, 2)
    assert [b["line"] for b in data["bad_lines"]] == [2, 3]


def test_migrate_check_and_apply_on_sqlite(tmp_path: Path) -> None:
    """`migrate --check` exits 1 while steps are pending; `migrate` applies them once."""
    env = {"SONALITY_STORE": f"sqlite:///{tmp_path / 'm.db'}", "SONALITY_LOG_LEVEL": "WARNING"}
    code, out, _ = invoke(env, "migrate", "--check")
    assert code == 1 and "pending" in out
    code, out, _ = invoke(env, "migrate")
    assert code == 0 and "applied" in out
    code, out, _ = invoke(env, "migrate")
    assert code == 0 and "nothing to apply" in out
    code, out, _ = invoke(env, "migrate", "--check")
    assert code == 0 and "current" in out


def test_demo_runs_on_a_fresh_store(env: dict[str, str]) -> None:
    """The main job records the sample conversation and explains pending enrichment."""
    code, out, _ = invoke(env, "demo")
    assert code == 0
    assert "recorded 10 new exchanges" in out and "Enrichment is pending" in out
    code, out, _ = invoke(env, "demo")
    assert code == 0 and "recorded 0 new exchanges" in out


def test_environment_is_not_read_at_import() -> None:
    """Importing sonality does not read SONALITY_* variables (a bad value only fails at use)."""
    env = {**os.environ, "SONALITY_STORE": "mysql://bad"}
    out = subprocess.run(
        [sys.executable, "-c", "import sonality.service, sonality.cli"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr


def test_doctor_counts_episodes_without_embeddings(env: dict[str, str], tmp_path: Path) -> None:
    """`doctor` reports, per persona, the episodes stored without an embedding."""
    import asyncio
    from datetime import UTC, datetime

    from sonality.models import EpisodeDraft
    from sonality.storage.sqlite.store import SqliteStore

    async def append_unembedded() -> None:
        store = await SqliteStore.open(tmp_path / "cli.db", embedding_dimensions=256)
        try:
            draft = EpisodeDraft(
                id="e-unembedded",
                persona_id="ada",
                user_id="u1",
                conversation_id="c1",
                user_message="the embedder was down",
                agent_response="ok",
                created_at=datetime(2026, 1, 1, tzinfo=UTC),
            )
            await store.append_episode(draft)
        finally:
            await store.close()

    invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    invoke(
        env, "record", "--persona", "ada", "--user", "u1", "--message", "hi", "--response", "hey"
    )
    asyncio.run(append_unembedded())
    code, out, _ = invoke(env, "doctor", "--json")
    assert code == 0 and json.loads(out)["episodes"]["ada"]["unembedded"] == 1
    code, out, _ = invoke(env, "doctor")
    assert "1 without embedding" in out


def test_doctor_reports_the_lag_of_each_persona(env: dict[str, str], tmp_path: Path) -> None:
    """`doctor` gives, per persona, the age of its oldest pending episode and of its oldest
    unthought Thinker turn, and marks the persona BEHIND past
    SONALITY_LAG_DEGRADED_SECONDS (without failing the check)."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    from sonality.models import EpisodeDraft, RuntimeMode, ThinkerTurn
    from sonality.storage.sqlite.store import SqliteStore

    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)

    async def leave_work_pending() -> None:
        store = await SqliteStore.open(tmp_path / "cli.db", embedding_dimensions=256)
        try:
            draft = EpisodeDraft(
                id="e-old",
                persona_id="ada",
                user_id="u1",
                conversation_id="c1",
                user_message="said an hour ago",
                agent_response="ok",
                created_at=an_hour_ago,
            )
            episode, _ = await store.append_episode(draft)
            turn = ThinkerTurn(
                persona_id="ada",
                episode_id=episode.id,
                conversation_id="c1",
                user_id="u1",
                turn=episode.turn,
                mode=RuntimeMode.FULL,
                created_at=an_hour_ago + timedelta(minutes=30),
                updated_at=an_hour_ago + timedelta(minutes=30),
            )
            await store.begin_turn(turn, [])
        finally:
            await store.close()

    invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    invoke(env, "persona", "create", "bo", "--name", "Bo", "--identity", "I am Bo.")
    asyncio.run(leave_work_pending())
    code, out, _ = invoke(env, "doctor", "--json")
    assert code == 0
    lag = json.loads(out)["lag"]
    assert lag["bound_seconds"] == 60
    ada = lag["personas"]["ada"]
    assert 3600 <= ada["episode_seconds"] < 3700 and 1800 <= ada["turn_seconds"] < 1900
    assert ada["behind"] is True
    assert lag["personas"]["bo"] == {"episode_seconds": 0, "turn_seconds": 0, "behind": False}
    code, out, _ = invoke(env, "doctor")
    assert code == 0
    assert "oldest pending episode 36" in out and "BEHIND (over 60 s)" in out
    patient = {**env, "SONALITY_LAG_DEGRADED_SECONDS": "86400"}
    code, out, _ = invoke(patient, "doctor", "--json")
    assert json.loads(out)["lag"]["personas"]["ada"]["behind"] is False
