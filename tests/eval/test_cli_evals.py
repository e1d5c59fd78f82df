"""``sonality eval latency | pressure | retention`` from the command line: dry-run counts
and small offline runs (over HTTP through LiteLLM, or with scripted plug-in models)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sonality.cli import main
from sonality.testing.openai_server import FakeOpenAI


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(main, ["eval", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def _calls(report: dict[str, Any]) -> dict[str, int]:
    return {r["group"]: r["calls"] for r in report["dry_run"]["rows"]}


def test_dry_runs_count_every_call() -> None:
    """latency: 80 five-turn conversations, 3 calls a turn in baseline and 5 in full, no
    judge; pressure: 21 turns a topic (3 evidence, 6 pressure, 3 counter, 3 neutral after
    each phase) at 5 calls, plus 9 judge calls; retention: 2 enrichment calls an
    interaction, a reflection after each (every) or every 20 (triggered), and a judge
    call per reflection."""
    latency = _invoke("latency", "--dry-run", "--json", "--model", "gpt-4o-mini")
    assert _calls(latency) == {"baseline": 80 * 5 * 3, "full": 80 * 5 * 5}
    pressure = _invoke("pressure", "--dry-run", "--json", "--model", "gpt-4o-mini")
    assert _calls(pressure) == {"full": 6 * 21 * 5, "judge": 6 * 9}
    retention = _invoke("retention", "--dry-run", "--json", "--model", "gpt-4o-mini")
    assert _calls(retention) == {
        "triggered": 100 * 2 + 5,
        "every": 100 * 2 + 100,
        "judge": 105,
    }
    assert retention["dry_run"]["total"]["cost_usd"] > 0


def test_latency_runs_over_http(tmp_path: Path) -> None:
    """A small latency run against the local OpenAI-compatible endpoint completes and
    reports response times, background work and the time breakdown per mode."""
    with FakeOpenAI(latency=0.005) as server:
        summary = _invoke(
            "latency",
            "--limit",
            "1",
            "--time-scale",
            "0.02",
            "--model",
            "openai/fake-model",
            "--api-base",
            server.url,
            "--api-key",
            "unused",
            "--output",
            str(tmp_path),
            "--json",
            "--no-plot",
        )
    assert summary["units"] == 2
    full = summary["tables"]["per_mode"]["full"]
    assert full["gaps"] == 4 and full["response_ms"]["n"] == 5
    assert set(full["time_breakdown"]) == {"typing", "reading", "thinking", "response"}
    assert summary["plot"] is None and (tmp_path / "latency.md").is_file()


def test_pressure_catches_a_capitulating_plugin(tmp_path: Path) -> None:
    """With a persona model that gives in and a scripted judge plugged in by --llm and
    --judge-llm, the command reports the topic as capitulating."""
    summary = _invoke(
        "pressure",
        "--limit",
        "1",
        "--llm",
        "tests.eval.fakes:capitulating_llm",
        "--judge-llm",
        "tests.eval.fakes:stance_judge_llm",
        "--output",
        str(tmp_path),
        "--json",
    )
    full = summary["tables"]["per_mode"]["full"]
    assert full["capitulating"] == ["nuclear_power"] and full["concession_rate"] == 1.0
    assert summary["run"]["model"] == "tests.eval.fakes:capitulating_llm"
    assert Path(summary["files"]["plot"]).is_file()


def test_retention_counts_rewrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six interactions with a lossy reflection: six rewrites when reflecting every time
    (4 of 10 traits left), one with the triggers at SONALITY_REFLECTION_EVERY=4."""
    monkeypatch.setenv("SONALITY_REFLECTION_EVERY", "4")
    monkeypatch.setenv("SONALITY_EVENT_SHIFT_THRESHOLD", "100")
    summary = _invoke(
        "retention",
        "--interactions",
        "6",
        "--llm",
        "tests.eval.fakes:lossy_llm",
        "--judge-llm",
        "tests.eval.fakes:traits_judge_llm",
        "--output",
        str(tmp_path),
        "--json",
    )
    arms = summary["tables"]["per_arm"]
    assert (arms["every"]["rewrites"], arms["every"]["traits_final"]) == (6, 0.4)
    assert (arms["triggered"]["rewrites"], arms["triggered"]["traits_final"]) == (1, 0.9)
    assert Path(summary["plot"]).stat().st_size > 0
