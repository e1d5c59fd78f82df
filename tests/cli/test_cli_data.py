"""The forget / delete / correct / export / import / copy commands through click's runner,
on real SQLite files (and a Neo4j server for `copy --to bolt://`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sonality.cli import main
from tests.conftest import EMBEDDING_DIMENSIONS


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'cli.db'}",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "WARNING",
        "SONALITY_MODEL": "",
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
    }


def invoke(env: dict[str, str], *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env, input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _seed(env: dict[str, str]) -> None:
    invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    for i, user in enumerate(["u1", "u2", "u1"], 1):
        code, _, err = invoke(
            env,
            *("record", "--persona", "ada", "--user", user, "--conversation", f"c-{user}"),
            *("--message", f"message {i}", "--response", f"reply {i}", "--id", f"e{i}"),
        )
        assert code == 0, err


def _episodes(env: dict[str, str]) -> list[str]:
    code, out, _ = invoke(env, "episodes", "--persona", "ada", "--json")
    assert code == 0
    return sorted(e["id"] for e in json.loads(out))


def test_destructive_commands_refuse_without_a_terminal_or_yes(env: dict[str, str]) -> None:
    """forget, episode delete and persona delete without --yes and without a TTY exit 2
    with one line and change nothing."""
    _seed(env)
    for args in (
        ("forget", "--persona", "ada", "--user", "u1"),
        ("episode", "delete", "--persona", "ada", "e2"),
        ("persona", "delete", "ada"),
    ):
        code, out, err = invoke(env, *args)
        assert code == 2, (args, out, err)
        assert err.strip().splitlines() == [
            "error: refusing to erase without confirmation: no terminal to ask on; pass --yes"
        ]
    assert _episodes(env) == ["e1", "e2", "e3"]


def test_forget_and_episode_delete_with_yes(env: dict[str, str]) -> None:
    """--yes erases: the user's episodes go, the audit record comes back as JSON without
    the user id, an unknown user or persona is exit 4."""
    _seed(env)
    code, out, _ = invoke(env, "forget", "--persona", "ada", "--user", "u1", "--yes", "--json")
    assert code == 0
    record = json.loads(out)
    assert record["kind"] == "user" and record["episodes"] == 2 and "u1" not in out
    assert _episodes(env) == ["e2"]
    code, out, _ = invoke(env, "episode", "delete", "--persona", "ada", "e2", "--yes")
    assert code == 0 and "deleted the episode: 1 episodes" in out
    assert _episodes(env) == []
    code, _, err = invoke(env, "forget", "--persona", "ada", "--user", "u1", "--yes")
    assert code == 4 and err.startswith("error:")
    code, _, _ = invoke(env, "forget", "--persona", "ghost", "--user", "u1", "--yes")
    assert code == 4


def test_persona_delete_and_fact_commands(env: dict[str, str]) -> None:
    """persona delete --yes removes the persona (then exit 4); fact retract/correct on an
    unknown fact is exit 4 and a bad severity is a usage error."""
    _seed(env)
    code, _, err = invoke(env, "fact", "retract", "--persona", "ada", "fact_nope")
    assert code == 4 and "error:" in err
    code, _, _ = invoke(
        env, "fact", "correct", "--persona", "ada", "fact_nope", "--text", "x", "--severity", "9"
    )
    assert code == 2
    code, _, err = invoke(env, "fact", "correct", "--persona", "ada", "fact_nope", "--text", "x")
    assert code == 4
    code, out, _ = invoke(env, "persona", "delete", "ada", "--yes")
    assert code == 0 and out.startswith("deleted persona ada")
    code, _, _ = invoke(env, "persona", "show", "ada")
    assert code == 4


def test_export_import_round_trip_between_files(env: dict[str, str], tmp_path: Path) -> None:
    """export to a file, import into a fresh store, export again: the same bytes; a second
    import reports unchanged."""
    _seed(env)
    first = tmp_path / "ada.jsonl"
    code, _, err = invoke(env, "export", "--persona", "ada", "-o", str(first))
    assert code == 0, err
    other = {**env, "SONALITY_STORE": f"sqlite:///{tmp_path / 'other.db'}"}
    code, out, _ = invoke(other, "import", str(first), "--json")
    assert code == 0 and [r["status"] for r in json.loads(out)] == ["imported"]
    code, out, _ = invoke(other, "export")
    assert code == 0 and out == first.read_text("utf-8")
    code, out, _ = invoke(other, "import", str(first))
    assert code == 0 and "ada: unchanged" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe not utf-8\n")
    code, _, err = invoke(other, "import", str(bad))
    assert code == 2 and "not UTF-8" in err


@pytest.mark.neo4j
def test_copy_from_sqlite_to_neo4j(
    env: dict[str, str], neo4j_store: Any, neo4j_uri: str, neo4j_auth: Any
) -> None:
    """copy --from sqlite:///… --to bolt://… writes the personas; exporting from Neo4j gives
    the SQLite export's bytes; a bad URL is a configuration error (exit 3)."""
    _seed(env)
    neo = {**env, "SONALITY_STORE": neo4j_uri}
    if neo4j_auth:
        neo["SONALITY_NEO4J_USER"], neo["SONALITY_NEO4J_PASSWORD"] = neo4j_auth
    invoke(neo, "persona", "delete", "ada", "--yes")
    code, out, err = invoke(
        neo, "copy", "--from", env["SONALITY_STORE"], "--to", neo4j_uri, "--json"
    )
    assert code == 0, err
    assert [r["status"] for r in json.loads(out)] == ["imported"]
    assert invoke(neo, "export", "--persona", "ada")[1] == invoke(env, "export")[1]
    code, _, err = invoke(neo, "copy", "--from", "mysql://x", "--to", neo4j_uri)
    assert code == 3 and "store URL" in err


@pytest.mark.parametrize(
    "args",
    [
        ("beliefs", "--persona", "nobody"),
        ("facts", "--persona", "nobody", "--user", "u1"),
        ("episodes", "--persona", "nobody"),
        ("context", "--persona", "nobody", "--user", "u1", "--message", "hi"),
        ("record", "--persona", "nobody", "--user", "u1", "--message", "m", "--response", "r"),
        ("enrich", "--persona", "nobody"),
        ("reflect", "--persona", "nobody"),
        ("reflections", "--persona", "nobody"),
        ("snapshot", "history", "--persona", "nobody"),
        ("snapshot", "show", "--persona", "nobody"),
        ("persona", "show", "nobody"),
        ("persona", "delete", "nobody", "--yes"),
        ("forget", "--persona", "nobody", "--user", "u1", "--yes"),
        ("episode", "delete", "--persona", "nobody", "e1", "--yes"),
        ("fact", "retract", "--persona", "nobody", "f1"),
        ("export", "--persona", "nobody"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_an_unknown_persona_is_exit_4_everywhere(
    env: dict[str, str], args: tuple[str, ...]
) -> None:
    """Every command naming a persona the store does not hold exits 4 with one line,
    whether it reads or writes (a read never answers "nothing yet" for a missing persona)."""
    _seed(env)
    code, out, err = invoke(env, *args)
    assert (code, out) == (4, ""), (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "nobody" in err


def test_enrich_on_an_empty_store_says_so(env: dict[str, str]) -> None:
    """`enrich` with no persona at all prints a line rather than nothing."""
    code, out, _ = invoke(env, "enrich")
    assert code == 0 and out.strip() == "no personas yet: nothing to enrich"


def test_doctor_creates_nothing(env: dict[str, str], tmp_path: Path) -> None:
    """`doctor` on a SQLite URL whose folder (or file) does not exist reports the store
    unreachable, says why, exits 1 and creates neither the folder nor the file."""
    missing = tmp_path / "nonexistent" / "dir"
    code, out, _ = invoke(
        {**env, "SONALITY_STORE": f"sqlite:///{missing / 'x.db'}"}, "doctor", "--json"
    )
    report = json.loads(out)
    assert code == 1 and report["store"]["reachable"] is False
    assert "folder does not exist" in report["store"]["error"]
    assert not (tmp_path / "nonexistent").exists()
    code, out, _ = invoke(env, "doctor")
    assert code == 1 and "UNREACHABLE (the SQLite file does not exist" in out
    assert not (tmp_path / "cli.db").exists()
