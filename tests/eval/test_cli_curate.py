"""``sonality eval curate`` from the command line: dry run, a small real run over HTTP
through the real LiteLLM adapter, resuming, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.testing.openai_server import FakeOpenAI


def test_dry_run_prints_calls_and_tokens_per_mode(tmp_path: Path) -> None:
    """On the dev split (80 cases, 34 turns over the five scenarios) the dry run counts
    1 call a turn for the bare model, 3 in baseline, 4 with one Thinker module, 5 in full,
    one judge call per
    dialogue, prices them from litellm's cost map, and sends and writes nothing."""
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["eval", "curate", "--dry-run", "--json", "--model", "gpt-4o-mini", "--output", str(out)],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["dry_run"]
    rows = {r["group"]: r for r in report["rows"]}
    turns = 80 * (5 + 6 + 7 + 8 + 8)
    assert {g: r["calls"] for g, r in rows.items()} == {
        "bare": turns,
        "baseline": 3 * turns,
        "threads": 4 * turns,
        "controller": 4 * turns,
        "full": 5 * turns,
        "judge": 5 * 80 * 5,
    }
    assert rows["full"]["by_component"] == {
        "controller": turns,
        "enrichment": 2 * turns,
        "monologue": turns,
        "talker": turns,
    }
    assert rows["bare"]["by_component"] == {"talker": turns}
    assert rows["bare"]["input_tokens"] < rows["baseline"]["input_tokens"]
    assert rows["baseline"]["input_tokens"] < rows["threads"]["input_tokens"]
    assert rows["threads"]["input_tokens"] < rows["full"]["input_tokens"]
    assert all(r["cost_usd"] and r["cost_usd"] > 0 for r in rows.values())
    assert report["total"]["calls"] == sum(r["calls"] for r in rows.values())
    assert not out.exists()


def test_dry_run_table_says_unpriced_for_unknown_models() -> None:
    """A model litellm cannot price is reported as unpriced, not as free."""
    result = CliRunner().invoke(
        main, ["eval", "curate", "--dry-run", "--limit", "1", "--model", "openai/no-such-model"]
    )
    assert result.exit_code == 0, result.output
    assert "unpriced" in result.stdout and "$0.00" not in result.stdout
    assert "| full " in result.stdout and "nothing was sent" in result.stdout


def test_small_run_over_http_completes_and_resumes(tmp_path: Path) -> None:
    """--modes bare,baseline,full --limit 2 against a local OpenAI-compatible endpoint
    (real LiteLLM over HTTP) completes, writes results, summary, tables (with the gains
    over the bare model and over the baseline) and plot; the same command again resumes
    every dialogue without a model call; another judge is refused."""
    out = tmp_path / "out"
    with FakeOpenAI() as server:
        args = [
            "curate",
            "--modes",
            "bare,baseline,full",
            "--limit",
            "2",
            "--scenarios",
            "1,5",
            "--distractors",
            "1",
            "--model",
            "openai/fake-model",
            "--api-base",
            server.url,
            "--api-key",
            "unused",
            "--output",
            str(out),
            "--json",
        ]
        first = CliRunner().invoke(main, ["eval", *args])
        assert first.exit_code == 0, first.output
        summary = json.loads(first.stdout)
        chats = server.chat_requests()
        assert summary["units"] == 12 and summary["failed"] == []
        judged = [c for c in chats if "grade one answer" in c.system]
        assert len(judged) == 12
        assert summary["usage"]["persona"]["calls"] == len(chats) - len(judged)
        assert summary["run"]["model"] == "openai/fake-model"
        assert summary["run"]["judge"] == "openai/fake-model"
        assert len(summary["run"]["dataset_sha256"]) == 64
        for name in ("curate.jsonl", "curate-summary.json", "curate.md", "curate.png"):
            assert (out / name).stat().st_size > 0, name
        lines = (out / "curate.jsonl").read_text().splitlines()
        assert len(lines) == 13 and "run" in json.loads(lines[0])
        assert "curate: 12/12" in first.stderr  # progress on stderr, not stdout
        tables = (out / "curate.md").read_text()
        assert "Relative gain over bare, the model alone" in tables
        assert "Relative gain over baseline, Sonality's Talker alone" in tables

        again = CliRunner().invoke(main, ["eval", *args])
        assert again.exit_code == 0, again.output
        assert json.loads(again.stdout)["resumed"] == 12
        assert len(server.chat_requests()) == len(chats)

        other = CliRunner().invoke(main, ["eval", *args, "--judge-model", "openai/other"])
        assert other.exit_code == 5
        assert "another run" in other.stderr and len(other.stderr.strip().splitlines()) == 1


def test_bad_cases_file_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    """A malformed cases file stops the run with one line naming the file and line."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "x1", "category": "Allergies"}\n', encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["eval", "curate", "--cases", str(cases), "--model", "openai/x", "--output", str(out)],
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: bad record") and "line=1" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_no_model_is_a_configuration_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a model the run stops before doing anything, with exit code 3."""
    monkeypatch.delenv("SONALITY_MODEL", raising=False)
    result = CliRunner().invoke(main, ["eval", "curate", "--output", str(tmp_path / "o")])
    assert result.exit_code == 3 and "no model to evaluate" in result.stderr


@pytest.mark.parametrize("command", ["", "curate", "latency", "pressure", "retention"])
def test_help_imports_nothing_heavy(command: str) -> None:
    """`sonality eval [command] --help` loads no litellm, driver, facade or matplotlib:
    the suite's modules load when a command runs."""
    path = ["eval", command] if command else ["eval"]
    code = (
        "import sys\n"
        "from sonality.cli import main\n"
        "try:\n"
        f"    main([*{path!r}, '--help'], prog_name='sonality')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "heavy = [m for m in ('litellm', 'neo4j', 'matplotlib', 'sonality.service', "
        "'sonality.eval.curate', 'apscheduler') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Usage: sonality eval" in done.stdout
