"""`sonality migrate` and `doctor` against a real, fresh Neo4j database."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from click.testing import CliRunner

from sonality.cli import main
from tests.conftest import EMBEDDING_DIMENSIONS

pytestmark = pytest.mark.neo4j


@pytest.fixture
async def bare(raw_graph: Any, neo4j_session_store: Any) -> AsyncIterator[Any]:
    """An empty database without schema; the session's schema is put back afterwards."""
    await neo4j_session_store.delete_all()
    await raw_graph.drop_schema()
    yield raw_graph
    await neo4j_session_store.migrate()


@pytest.fixture
def env(neo4j_uri: str) -> dict[str, str]:
    return {
        "SONALITY_STORE": neo4j_uri,
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "SONALITY_LOG_LEVEL": "WARNING",
        "SONALITY_LOG_FORMAT": "json",
    }


def test_migrate_on_a_fresh_database(bare: Any, env: dict[str, str]) -> None:
    """--check exits 1 while migrations are pending; migrate applies them once; a second
    run applies nothing; --check is then clean and doctor reports the schema current."""
    runner = CliRunner()
    checked = runner.invoke(main, ["migrate", "--check", "--json"], env=env)
    assert checked.exit_code == 1, checked.output
    pending = json.loads(checked.stdout)["pending"]
    assert pending and pending[0].startswith("V0001")

    applied = runner.invoke(main, ["migrate", "--json"], env=env)
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["applied"] == pending

    again = runner.invoke(main, ["migrate"], env=env)
    assert again.exit_code == 0 and "nothing to apply" in again.stdout
    assert runner.invoke(main, ["migrate", "--check"], env=env).exit_code == 0

    doctor = runner.invoke(main, ["doctor", "--json"], env=env)
    assert doctor.exit_code == 0, doctor.output
    report = json.loads(doctor.stdout)
    assert report["store"]["reachable"] is True and report["schema"]["current"] is True


def test_data_commands_refuse_an_unmigrated_database(bare: Any, env: dict[str, str]) -> None:
    """Without migrations, a data command fails with the schema exit code and a hint."""
    result = CliRunner().invoke(main, ["persona", "list"], env=env)
    assert result.exit_code == 6
    assert "sonality migrate" in result.stderr


def test_the_vector_index_follows_the_setting(bare: Any, env: dict[str, str]) -> None:
    """migrate with SONALITY_NEO4J_VECTOR_INDEX=on creates episode_embedding and says so;
    doctor reports it, and with the setting back at auto (no index on 5.26) it names the
    mismatch and the fix (exit 0: searches answer either way) until migrate drops it."""
    runner = CliRunner()
    on = {**env, "SONALITY_NEO4J_VECTOR_INDEX": "on"}
    applied = runner.invoke(main, ["migrate"], env=on)
    assert applied.exit_code == 0, applied.output
    assert "SONALITY_NEO4J_VECTOR_INDEX=on: episode_embedding ONLINE" in applied.stdout
    doctor = runner.invoke(main, ["doctor", "--json"], env=on)
    assert doctor.exit_code == 0, doctor.output
    index = json.loads(doctor.stdout)["schema"]["vector_index"]
    assert (index["wanted"], index["state"], index["dimensions"]) == (
        True,
        "ONLINE",
        EMBEDDING_DIMENSIONS,
    )
    assert index["matches_setting"] is True

    mismatch = runner.invoke(main, ["doctor"], env=env)
    assert mismatch.exit_code == 0, mismatch.output
    assert "SONALITY_NEO4J_VECTOR_INDEX=auto: episode_embedding ONLINE" in mismatch.stdout
    assert "run `sonality migrate`" in mismatch.stdout
    dropped = runner.invoke(main, ["migrate", "--json"], env=env)
    assert dropped.exit_code == 0, dropped.output
    index = json.loads(dropped.stdout)["vector_index"]
    assert (index["wanted"], index["state"], index["matches_setting"]) == (False, None, True)
    assert (
        "SONALITY_NEO4J_VECTOR_INDEX=auto: no index"
        in runner.invoke(main, ["doctor"], env=env).stdout
    )
