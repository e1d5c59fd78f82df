"""`sonality ingest`: ids from the exchange itself, bad input reported per line, and
progress that logs do not break."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.mind.ingest import Exchange, read_exchanges
from sonality.models import BadLine


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'cli.db'}",
        "SONALITY_LOG_FORMAT": "json",
        "SONALITY_LOG_LEVEL": "INFO",
        "SONALITY_MODEL": "",
    }


def invoke(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _line(message: str, **fields: object) -> bytes:
    return json.dumps({"message": message, "response": f"re: {message}", **fields}).encode()


def _write(path: Path, *lines: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _ingest(env: dict[str, str], path: Path, *extra: str) -> dict[str, object]:
    code, out, err = invoke(env, "-q", "ingest", str(path), "--persona", "ada", "--json", *extra)
    assert code in (0, 2), err
    result: dict[str, object] = json.loads(out)
    return result


@pytest.fixture
def ada(env: dict[str, str]) -> dict[str, str]:
    invoke(env, "persona", "create", "ada", "--name", "Ada", "--identity", "I am Ada.")
    return env


def test_copied_renamed_or_extended_files_store_nothing_twice(
    ada: dict[str, str], tmp_path: Path
) -> None:
    """The same exchanges under another file name, with a line prepended, or repeated in
    the file as a new occurrence: only what is new is stored."""
    lines = [_line("one"), _line("two"), _line("one")]  # "one" said twice: two exchanges
    first = _ingest(ada, _write(tmp_path / "a" / "chat.jsonl", *lines))
    assert (first["stored"], first["already_stored"]) == (3, 0)
    copied = _ingest(ada, _write(tmp_path / "b" / "copy.jsonl", _line("zero"), *lines))
    assert (copied["stored"], copied["already_stored"]) == (1, 3)
    _, out, _ = invoke(ada, "episodes", "--persona", "ada", "--json")
    assert sorted(e["user_message"] for e in json.loads(out)) == ["one", "one", "two", "zero"]


def test_two_users_files_with_the_same_name_and_lines_do_not_collide(
    ada: dict[str, str], tmp_path: Path
) -> None:
    """chat.jsonl of user u1 and chat.jsonl of user u2 with identical lines are two users'
    exchanges (by their user_id field, or by --user)."""
    same = [_line("hello"), _line("bye")]
    assert (
        _ingest(ada, _write(tmp_path / "u1" / "chat.jsonl", *same), "--user", "u1")["stored"] == 2
    )
    assert (
        _ingest(ada, _write(tmp_path / "u2" / "chat.jsonl", *same), "--user", "u2")["stored"] == 2
    )
    tagged = [_line("hello", user_id="u3"), _line("hello", user_id="u4")]
    assert _ingest(ada, _write(tmp_path / "u3" / "chat.jsonl", *tagged))["stored"] == 2


def test_an_id_or_timestamp_field_decides_identity() -> None:
    """An `id` field is the episode id; with a `timestamp`, the same text at two times is
    two exchanges and the same text at the same time is one."""
    rows = list(
        read_exchanges(
            b"\n".join(
                [
                    _line("x", id="mine"),
                    _line("x", timestamp="2026-01-01T10:00:00Z"),
                    _line("x", timestamp="2026-01-01T11:00:00Z"),
                    _line("x", timestamp="2026-01-01T10:00:00Z"),
                ]
            ),
            persona_id="ada",
            default_user="u",
            default_conversation="c",
        )
    )
    ids = [r.id for r in rows if isinstance(r, Exchange)]
    assert ids[0] == "mine" and ids[1] != ids[2] and ids[1] == ids[3]


def test_bad_input_is_reported_per_line_and_good_lines_are_kept(
    ada: dict[str, str], tmp_path: Path
) -> None:
    """A BOM is skipped; invalid UTF-8, a JSON line nested too deeply for the parser,
    `"user_id": null` and a non-string message are one-line reports with their line
    numbers (exit 2), the lines around them are stored, and a re-run stores nothing."""
    deep = b"[" * 100_000 + b"]" * 100_000
    path = _write(
        tmp_path / "bad.jsonl",
        b"\xef\xbb\xbf" + _line("first"),
        b'{"message": "caf\xe9", "response": "x"}',
        deep,
        _line("nulled", user_id=None),
        json.dumps({"message": 7, "response": "x"}).encode(),
        _line("last"),
    )
    code, out, err = invoke(ada, "-q", "ingest", str(path), "--persona", "ada")
    assert code == 2 and "stored 2," in out and "bad lines 4" in out
    reports = [line for line in err.splitlines() if line.startswith("line ")]
    assert reports == [
        "line 2: not UTF-8 text (byte 17)",
        "line 3: not JSON: nested too deeply",
        "line 4: user_id must be a string, not null",
        "line 5: message must be a string, not int",
    ]
    assert err.strip().splitlines()[-1] == "error: 4 bad line(s) not recorded (lines=[2, 3, 4, 5])"
    assert _ingest(ada, path)["already_stored"] == 2
    rows = list(read_exchanges(deep, persona_id="a", default_user="u", default_conversation="c"))
    assert rows == [BadLine(1, "not JSON: nested too deeply")]


def test_per_episode_info_events_are_held_back_during_the_bars(
    ada: dict[str, str], tmp_path: Path
) -> None:
    """At INFO, ingest's per-episode events do not interleave with the bars; off a
    terminal no bar is drawn at all (not even its label); with -v the events show; with
    -q neither bar labels nor INFO events appear."""
    path = _write(tmp_path / "x.jsonl", _line("one"), _line("two"))
    code, _, err = invoke(ada, "ingest", str(path), "--persona", "ada", "--no-enrich")
    assert code == 0 and "episode_recorded" not in err and "storing" not in err
    path = _write(tmp_path / "y.jsonl", _line("three"))
    code, _, err = invoke(ada, "-v", "ingest", str(path), "--persona", "ada", "--no-enrich")
    assert code == 0 and "episodes_recorded" in err
    path = _write(tmp_path / "z.jsonl", _line("four"))
    code, _, err = invoke(ada, "-q", "ingest", str(path), "--persona", "ada", "--no-enrich")
    assert code == 0 and err == ""


def test_enrichment_under_its_bar_logs_no_info_events(ada: dict[str, str], tmp_path: Path) -> None:
    """With a model (the offline OpenAI-compatible fake over HTTP), ingest enriches every
    stored line under the `enriching` bar, and at INFO none of the per-episode events
    (model calls, enrichments) reach stderr; the summary counts them."""
    from sonality.testing.openai_server import FakeOpenAI

    path = _write(tmp_path / "x.jsonl", _line("one"), _line("two"), _line("three"))
    with FakeOpenAI() as server:
        env = {
            **ada,
            "SONALITY_MODEL": "openai/fake",
            "SONALITY_LLM_API_BASE": server.url,
            "SONALITY_LLM_API_KEY": "unused",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        code, out, err = invoke(env, "ingest", str(path), "--persona", "ada")
    assert code == 0, err
    assert "stored 3," in out and "enriched 3, failed 0, pending 0" in out
    assert "llm_call" not in err and "episode_enriched" not in err and "enrichment_pass" not in err


def test_ingest_stores_in_batches(ada: dict[str, str], tmp_path: Path) -> None:
    """2,500 good lines (and one bad one in the middle) are stored by two bulk appends of
    at most 2,000: every episode of one append carries that append's single clock
    reading, so the file holds exactly two distinct write times (one per line when each
    exchange was recorded alone); turns still follow the file."""
    lines = [_line(f"message {i}", conversation_id=f"c{i % 5}") for i in range(2_500)]
    lines.insert(1_200, _line("bad", user_id=None))
    result = _ingest(ada, _write(tmp_path / "big.jsonl", *lines))
    assert (result["stored"], result["bad_lines"]) == (
        2_500,
        [{"line": 1_201, "error": "user_id must be a string, not null"}],
    )
    db = sqlite3.connect(ada["SONALITY_STORE"].removeprefix("sqlite:///"))
    try:
        [(stamps,)] = db.execute(
            "SELECT COUNT(DISTINCT created_at) FROM episodes WHERE persona_id = 'ada'"
        ).fetchall()
        turns = db.execute(
            "SELECT user_message, turn FROM episodes WHERE conversation_id = 'c3' ORDER BY turn"
        ).fetchall()
    finally:
        db.close()
    assert stamps == 2
    assert [m for m, _ in turns] == [f"message {i}" for i in range(3, 2_500, 5)]
    assert [t for _, t in turns] == list(range(1, 501))


def test_an_id_taken_by_another_exchange_is_a_bad_line_and_the_rest_is_stored(
    ada: dict[str, str], tmp_path: Path
) -> None:
    """A line whose id is already stored for another exchange, or used earlier in the file
    for another one, is reported with its number; every other line of its batch is stored."""
    assert _ingest(ada, _write(tmp_path / "first.jsonl", _line("kept", id="x1")))["stored"] == 1
    result = _ingest(
        ada,
        _write(
            tmp_path / "second.jsonl",
            _line("a"),
            _line("not the stored exchange", id="x1"),
            _line("b", id="y1"),
            _line("c"),
            _line("not the exchange of line 3", id="y1"),
            _line("d"),
        ),
    )
    assert [item["line"] for item in result["bad_lines"]] == [2, 5]  # type: ignore[union-attr]
    assert (result["stored"], result["already_stored"]) == (4, 0)
    _, out, _ = invoke(ada, "episodes", "--persona", "ada", "--json")
    assert sorted(e["user_message"] for e in json.loads(out)) == ["a", "b", "c", "d", "kept"]


def test_the_progress_bar_is_drawn_on_a_terminal(ada: dict[str, str], tmp_path: Path) -> None:
    """With stderr on a terminal (a pseudo-terminal here), ingest draws its storing bar
    there, to 100 %; stdout keeps the summary alone."""
    import os
    import pty
    import subprocess
    import sys

    path = _write(tmp_path / "x.jsonl", *(_line(f"m{i}") for i in range(30)))
    command = [sys.executable, "-m", "sonality", "ingest", str(path), "--persona", "ada"]
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*command, "--no-enrich"],
            env={**os.environ, **ada},
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=120,
            check=False,
        )
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    assert b"storing" in drawn and b"100%" in drawn
    assert done.stdout.decode().strip() == "stored 30, already stored 0, bad lines 0"
