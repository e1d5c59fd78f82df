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
from tools.bench_cli_startup import READS


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


def test_fact_add_keeps_a_fact_once_and_refuses_another_users_episode(
    env: dict[str, str],
) -> None:
    """fact add keeps a fact backed by the user's episode (listed by facts), the same
    words again return the kept fact; an episode of another user is exit 4, a bad
    severity a usage error (exit 2), and neither writes."""
    _seed(env)
    add = ("fact", "add", "--persona", "ada", "--user", "u1", "--episode", "e3")
    code, out, err = invoke(env, *add, "--text", "Uses a wheelchair.", "--kind", "constraint")
    assert code == 0, err
    kept = json.loads(invoke(env, *add, "--text", "uses a WHEELCHAIR", "--json")[1])
    assert out.startswith(f"kept {kept['id']} [constraint, severity 1, active]")
    assert invoke(env, "fact", "add", *add[2:6], "--episode", "e2", "--text", "x")[0] == 4
    assert invoke(env, *add, "--text", "x", "--severity", "9")[0] == 2
    code, out, _ = invoke(env, "facts", "--persona", "ada", "--user", "u1", "--json")
    assert [f["text"] for f in json.loads(out)] == ["Uses a wheelchair."]


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


def test_erasures_lists_the_audit_records(either_env: dict[str, str]) -> None:
    """`erasures` lists a persona's audit records oldest first, as text and JSON, without
    the erased ids; none yet says so; they are still listed after the persona's deletion;
    a persona that never existed is exit 4."""
    env = either_env
    _seed(env)
    code, out, _ = invoke(env, "erasures", "--persona", "ada")
    assert (code, out) == (0, "no erasures yet\n")
    assert invoke(env, "forget", "--persona", "ada", "--user", "u1", "--yes")[0] == 0
    assert invoke(env, "episode", "delete", "--persona", "ada", "e2", "--yes")[0] == 0
    code, out, _ = invoke(env, "erasures", "--persona", "ada", "--json")
    assert code == 0
    records = json.loads(out)
    assert [(r["kind"], r["episodes"]) for r in records] == [("user", 2), ("episode", 1)]
    assert not {"u1", "e2"} & {str(v) for r in records for v in r.values()}  # ids hashed
    code, out, _ = invoke(env, "erasures", "--persona", "ada")
    assert code == 0 and len(out.splitlines()) == 2
    assert out.splitlines()[0].split()[2:4] == ["user", records[0]["id"]]
    assert "2 episodes" in out.splitlines()[0] and not {"u1", "e2"} & set(out.split())
    assert invoke(env, "persona", "delete", "ada", "--yes")[0] == 0
    code, out, _ = invoke(env, "erasures", "--persona", "ada", "--json")
    assert code == 0 and [r["kind"] for r in json.loads(out)] == ["user", "episode", "persona"]
    code, out, err = invoke(env, "erasures", "--persona", "nobody")
    assert (code, out) == (4, "") and "nobody" in err


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
        ("erasures", "--persona", "nobody"),
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


def _loaded_after(env: dict[str, str], reads: list[list[str]], modules: tuple[str, ...]) -> str:
    """Run ``reads`` in one fresh interpreter with SONALITY_MODEL set (each must exit 0) and
    return its stdout; its stderr names which of ``modules`` it had imported."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from sonality.cli import main\n"
        f"for args in {reads!r}:\n"
        "    try:\n        main(args, prog_name='sonality')\n"
        "    except SystemExit as exc:\n        assert exc.code == 0, (args, exc.code)\n"
        f"print('loaded:', sorted(m for m in {modules!r} if m in sys.modules), file=sys.stderr)\n"
    )
    run_env = {**os.environ, **env, "SONALITY_MODEL": "openai/gpt-4o-mini"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env)
    assert out.returncode == 0, out.stderr
    assert "loaded: []" in out.stderr, out.stderr
    return out.stdout


def test_read_commands_import_no_litellm_even_with_a_model_configured(
    env: dict[str, str],
) -> None:
    """With SONALITY_MODEL set, every read command answers (exit 0) without importing
    litellm, the Neo4j driver or APScheduler; the context block still counts tokens."""
    _seed(env)
    out = _loaded_after(env, READS, ("litellm", "neo4j", "apscheduler"))
    assert "message 1" in out  # the context block and the export did run


def test_listing_reads_load_only_their_own_command_modules(env: dict[str, str]) -> None:
    """On a small store no read command loads numpy (context embeds the message and ranks
    a few rows in plain floats; the export packs embeddings without it) nor another
    group's command module: the server's, the evaluation suite's, chat's, the demo's or the
    browser's; with SONALITY_STORE set, platformdirs (which only finds the default store)
    is not loaded either."""
    _seed(env)
    unneeded = (
        *("numpy", "platformdirs", "sonality.eval", "sonality.cli.eval", "sonality.cli.serve"),
        *("sonality.cli.chat", "sonality.cli.demo", "sonality.cli.browse"),
    )
    out = _loaded_after(env, READS, unneeded)
    assert "message 1" in out  # the context block and the episodes listing did run


def test_listing_reads_open_only_the_read_half_of_the_facade(env: dict[str, str]) -> None:
    """Every read but context opens the facade's read-only half (``mind.reads.Reads``):
    it imports neither the facade (``sonality.service``) nor what the facade assembles
    (recording, enrichment and reflection pipelines, the opinion rules and tunables)."""
    _seed(env)
    reads = [r for r in READS if r[0] != "context"]
    unneeded = (
        *("sonality.service", "sonality.mind.parts", "sonality.mind.recording"),
        *("sonality.mind.enrichment", "sonality.mind.reflection", "sonality.core.opinion"),
    )
    out = _loaded_after(env, reads, unneeded)
    assert "message 1" in out  # the episodes listing did run


def test_reads_load_no_write_side_pipeline(env: dict[str, str]) -> None:
    """No read command loads the write-side pipelines the facade builds on first use: the
    dual-process runtime (Talker, Thinker, affect) and the erasure pipeline."""
    _seed(env)
    unneeded = (
        *("sonality.mind.runtime", "sonality.mind.talker", "sonality.mind.thinker"),
        *("sonality.mind.affect", "sonality.mind.erasure", "sonality.core.erasure"),
    )
    out = _loaded_after(env, READS, unneeded)
    assert "message 1" in out  # the context block and the export did run


def test_demo_context_shows_the_identity_once(env: dict[str, str]) -> None:
    """Until the first reflection the snapshot is the core identity: the demo's context
    block prints that text once, not a second time as snapshot v1; at INFO, no per-event
    log line interrupts the demo's own output."""
    code, out, err = invoke({**env, "SONALITY_LOG_LEVEL": "INFO"}, "demo")
    assert code == 0 and err == ""
    block = out.split("=== context for:", 1)[1].split("=== beliefs ===", 1)[0]
    identity = block.split("## Who you are (Ada)\n", 1)[1].split("\n\n", 1)[0]
    assert len(identity) > 50 and block.count(identity) == 1
    assert "snapshot v1" not in block


def test_the_default_store_lives_in_the_user_data_dir_and_an_old_one_moves_there(
    tmp_path: Path,
) -> None:
    """Without SONALITY_STORE the store is platformdirs' user data dir; a store an older
    version left in ~/.config/sonality is moved there (with its data) on first use."""
    dirs = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    old = {
        **dirs,
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'config' / 'sonality' / 'sonality.db'}",
    }
    base = {"SONALITY_LOG_LEVEL": "WARNING", "SONALITY_MODEL": "", "SONALITY_STORE": None}
    code, _, err = invoke(
        {**base, **old}, "persona", "create", "ada", "--name", "A", "--identity", "I."
    )
    assert code == 0, err
    code, out, err = invoke({**base, **dirs}, "persona", "list", "--json")  # type: ignore[arg-type]
    assert code == 0, err
    assert [p["id"] for p in json.loads(out)] == ["ada"]
    assert (tmp_path / "data" / "sonality" / "sonality.db").is_file()
    assert not (tmp_path / "config" / "sonality" / "sonality.db").exists()


def test_pydantic_prefixes_never_reach_messages(env: dict[str, str]) -> None:
    """A bad setting is one line naming it, without pydantic's "Value error," prefix."""
    code, _, err = invoke({**env, "SONALITY_STORE": "mysql://nope"}, "persona", "list")
    assert code == 3 and err.startswith("error: bad setting SONALITY_STORE: SONALITY_STORE must")
    assert "Value error" not in err
