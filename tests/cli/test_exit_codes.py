"""Each kind of error leaves the CLI with its own exit code and one line on stderr:
2 bad input, 3 configuration, 4 not found, 5 conflict, 6 schema, 7 store, 8 model; 1 is
left for a genuine bug (an exception that is not a Sonality error)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sonality import errors
from sonality.cli import main

KINDS: dict[type[errors.SonalityError], int] = {
    errors.SonalityError: 1,
    errors.ValidationError: 2,
    errors.ConfigError: 3,
    errors.LLMConfigError: 3,
    errors.NotFoundError: 4,
    errors.PersonaNotFound: 4,
    errors.ConflictError: 5,
    errors.AlreadyExists: 5,
    errors.LeaseHeld: 9,
    errors.SchemaError: 6,
    errors.MigrationChecksumMismatch: 6,
    errors.StoreError: 7,
    errors.StoreUnavailable: 7,
    errors.LLMError: 8,
    errors.LLMUnavailable: 8,
    errors.AnswerTimeout: 8,
    errors.LLMResponseInvalid: 8,
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'codes.db'}",
        "SONALITY_EMBEDDING_DIMENSIONS": "16",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "CRITICAL",
        "SONALITY_MODEL": "",
    }


def invoke(env: dict[str, str], *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=stdin)


def one_error_line(result: Result) -> str:
    """The single ``error: …`` line a known error prints (no traceback)."""
    found = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(found) == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return found[0]


def with_persona(env: dict[str, str]) -> dict[str, str]:
    result = invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    assert result.exit_code == 0, result.output
    return env


def test_every_error_class_carries_its_kinds_exit_code() -> None:
    """Each class of the error tree maps to its branch's code; anything else is 1."""
    public = {
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.SonalityError)
    }
    assert public == set(KINDS)
    for cls, code in KINDS.items():
        assert errors.exit_code_for(cls("x")) == code, cls.__name__
    assert errors.exit_code_for(RuntimeError("x")) == 1


def test_bad_input_exits_2(env: dict[str, str]) -> None:
    """An id with a space is rejected as bad input: exit 2, one line naming the field."""
    result = invoke(
        with_persona(env),
        *("record", "--persona", "ada", "--user", "bad user", "--message", "m"),
        *("--response", "r"),
    )
    assert result.exit_code == 2 and "user_id" in one_error_line(result)


def test_bad_lines_of_an_ingested_file_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    """ingest keeps the good lines, reports the bad ones by number and exits 2 with one
    error line naming them (JSON on stdout stays parseable)."""
    path = tmp_path / "x.jsonl"
    path.write_text('{"message": "one", "response": "1"}\n{oops\n', encoding="utf-8")
    result = invoke(with_persona(env), "ingest", str(path), "--persona", "ada", "--json")
    assert result.exit_code == 2
    assert '"stored": 1' in result.stdout and "lines=[2]" in one_error_line(result)


def test_a_usage_error_exits_2(env: dict[str, str]) -> None:
    """A missing required option is bad input too (click's usage error): exit 2."""
    result = invoke(env, "record", "--persona", "ada", "--user", "u1", "--message", "hi")
    assert result.exit_code == 2 and "--response" in result.stderr


def test_a_bad_setting_exits_3(env: dict[str, str]) -> None:
    """An unsupported SONALITY_STORE is a configuration error: exit 3."""
    result = invoke({**env, "SONALITY_STORE": "mysql://nope"}, "persona", "list")
    assert result.exit_code == 3 and "SONALITY_STORE" in one_error_line(result)


def test_an_unimportable_llm_plugin_exits_3(env: dict[str, str]) -> None:
    """An --llm factory that cannot be imported is a configuration error: exit 3."""
    result = invoke(with_persona(env), "reflect", "--persona", "ada", "--llm", "no_such_mod:x")
    assert result.exit_code == 3 and "LLM factory" in one_error_line(result)


def test_an_unknown_persona_exits_4(env: dict[str, str]) -> None:
    """Reading a persona that does not exist: exit 4."""
    result = invoke(env, "persona", "show", "ghost")
    assert result.exit_code == 4 and "ghost" in one_error_line(result)


def test_creating_a_persona_twice_exits_5(env: dict[str, str]) -> None:
    """A persona id that exists already is a conflict: exit 5."""
    result = invoke(with_persona(env), "persona", "create", "ada", "--name", "A", "--identity", "x")
    assert result.exit_code == 5
    one_error_line(result)


def test_a_store_made_for_other_dimensions_exits_6(env: dict[str, str]) -> None:
    """A store migrated for 16-dimensional embeddings, opened for 32: schema error, exit 6."""
    with_persona(env)
    result = invoke({**env, "SONALITY_EMBEDDING_DIMENSIONS": "32"}, "persona", "list")
    assert result.exit_code == 6 and "dimensions" in one_error_line(result)


def test_a_damaged_store_exits_7(env: dict[str, str], tmp_path: Path) -> None:
    """A store file that is not a database is a store error: exit 7."""
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not an SQLite database, just text " * 4)
    result = invoke({**env, "SONALITY_STORE": f"sqlite:///{damaged}"}, "persona", "list")
    assert result.exit_code == 7
    one_error_line(result)


def test_chat_without_a_model_exits_8(env: dict[str, str]) -> None:
    """chat with neither SONALITY_MODEL nor --llm is a model error: exit 8."""
    result = invoke(with_persona(env), "chat", "--persona", "ada", "--user", "u1", stdin="hi\n")
    assert result.exit_code == 8 and "chat needs a model" in one_error_line(result)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_enrichment_stopped_by_an_unreachable_model_exits_8(env: dict[str, str]) -> None:
    """enrich against a model endpoint that refuses connections reports the pass on stdout,
    keeps the episode pending and exits 8."""
    with_persona(env)
    recorded = invoke(
        env, "record", "--persona", "ada", "--user", "u1", "--message", "hi", "--response", "yo"
    )
    assert recorded.exit_code == 0, recorded.output
    unreachable = {
        **env,
        "SONALITY_MODEL": "openai/gpt-4o-mini",
        "SONALITY_LLM_API_BASE": f"http://127.0.0.1:{_closed_port()}/v1",
        "SONALITY_LLM_API_KEY": "sk-test",
        "SONALITY_LLM_MAX_RETRIES": "0",
        "SONALITY_LLM_TIMEOUT": "5",
    }
    result = invoke(unreachable, "enrich", "--persona", "ada")
    assert result.exit_code == 8, result.output
    assert "pending 1 (stopped: llm_unavailable)" in result.stdout
    assert "unreachable" in one_error_line(result)


def test_a_genuine_bug_exits_1_with_its_traceback(env: dict[str, str]) -> None:
    """An exception that is not a Sonality error is not dressed up as one: it propagates
    (exit 1, traceback), unlike the one-line errors above."""
    result = invoke(
        with_persona(env), "reflect", "--persona", "ada", "--llm", "tests.cli.plugins:broken"
    )
    assert result.exit_code == 1
    assert isinstance(result.exception, RuntimeError)
    assert "error:" not in result.stderr
