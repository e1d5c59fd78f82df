"""The shared machinery: resumable results, failures retried on the next run, progress
on stderr that log lines do not break, and the statistics behind the tables."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sonality.errors import ConflictError, LLMUnavailable, ValidationError
from sonality.eval.progress import Progress
from sonality.eval.runner import ResultsFile, RunInfo, run_units
from sonality.eval.stats import bootstrap_gain, describe, percentile, wilson


def _info(**changes: Any) -> RunInfo:
    fields: dict[str, Any] = {
        "model": "m",
        "judge": "j",
        "dataset": "d",
        "dataset_sha256": "0" * 64,
        "seed": 0,
        "store": "sqlite",
        "options": {"modes": ["full"]},
    }
    fields.update(changes)
    return RunInfo.create("curate", **fields)


async def test_failed_units_are_retried_and_done_ones_are_not(tmp_path: Path) -> None:
    """A unit whose model call fails is not written; the next run with the same identity
    runs only that unit again and keeps the others' records."""
    path = tmp_path / "curate.jsonl"
    calls: list[int] = []

    async def flaky(unit: int) -> dict[str, Any]:
        calls.append(unit)
        if unit == 2 and calls.count(2) == 1:
            raise LLMUnavailable("down")
        return {"value": unit * 10}

    first = await run_units(
        [1, 2, 3],
        key=str,
        work=flaky,
        label="t",
        concurrency=2,
        results=ResultsFile(path, _info()),
    )
    assert first.failed == ["2"] and [r["value"] for r in first.records] == [10, 30]
    second = await run_units(
        [1, 2, 3],
        key=str,
        work=flaky,
        label="t",
        concurrency=2,
        results=ResultsFile(path, _info()),
    )
    assert second.failed == [] and second.resumed == 2
    assert [r["value"] for r in second.records] == [10, 20, 30]
    assert sorted(calls) == [1, 2, 2, 3]
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["run"]["model"] == "m" and len(lines) == 4


def test_results_of_another_run_are_refused(tmp_path: Path) -> None:
    """A results file made with another model, judge, dataset, seed or options is not
    continued (ConflictError naming what differs); --fresh starts it over."""
    path = tmp_path / "curate.jsonl"
    ResultsFile(path, _info())
    with pytest.raises(ConflictError) as caught:
        ResultsFile(path, _info(judge="other", seed=3))
    assert caught.value.context["differs"] == "judge,seed"
    ResultsFile(path, _info(judge="other"), fresh=True)
    assert json.loads(path.read_text().splitlines()[0])["run"]["judge"] == "other"
    (tmp_path / "junk.jsonl").write_text("not json\n")
    with pytest.raises(ValidationError):
        ResultsFile(tmp_path / "junk.jsonl", _info())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_lines_never_share_a_line_with_the_bar() -> None:
    """On a terminal, each log line clears the bar, is written whole, and the bar is
    drawn again below it; partial writes wait for their newline."""
    out = _Terminal()
    progress = Progress(out)
    logs = progress.log_stream()
    progress.start("curate", 4)
    progress.advance()
    logs.write('{"event": "llm_call", ')
    logs.write('"n": 1}\n')
    progress.advance()
    logs.write('{"event": "second"}\n{"event": "third"}\n')
    progress.advance(2)
    progress.finish()
    text = out.getvalue()
    visible = [re.sub(r".*\r\x1b\[2K", "", line) for line in text.split("\n")]
    assert '{"event": "llm_call", "n": 1}' in visible
    assert '{"event": "second"}' in visible and '{"event": "third"}' in visible
    assert all(("curate [" not in v) or v.startswith("curate [") for v in visible)
    assert visible[-2].startswith("curate [") and "4/4" in visible[-2]


def test_progress_without_a_terminal_prints_plain_lines() -> None:
    """Off a terminal, progress is a plain line at the start, every tenth and the end."""
    out = io.StringIO()
    progress = Progress(out)
    progress.start("pressure", 20)
    for _ in range(20):
        progress.advance()
    progress.finish()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("pressure: 0/20") and lines[-1].startswith("pressure: 20/20")
    assert len(lines) == 11 and "\r" not in out.getvalue()
    silent = io.StringIO()
    quiet = Progress(silent, enabled=False)
    quiet.start("x", 3)
    quiet.advance(3)
    quiet.finish()
    assert silent.getvalue() == ""


def test_statistics() -> None:
    """Wilson intervals bracket the rate (and stay inside [0, 1] at the extremes), the
    paired bootstrap is seeded, percentiles interpolate."""
    rate = wilson(69, 100)
    assert rate.low is not None and rate.high is not None
    assert rate.low < 0.69 < rate.high and round(rate.low, 3) == 0.594
    assert wilson(0, 5).low == 0.0 and wilson(5, 5).high == 1.0
    assert wilson(0, 0).rate is None
    pairs = [(False, True)] * 3 + [(True, True)] * 5 + [(True, False)] * 2
    gain = bootstrap_gain(pairs, seed=1)
    assert gain.gain == pytest.approx((0.8 - 0.7) / 0.7)
    assert gain == bootstrap_gain(pairs, seed=1)
    assert gain.low is not None and gain.high is not None and gain.low < gain.gain < gain.high
    assert bootstrap_gain([(False, True)], seed=0).gain is None
    assert percentile([1, 2, 3, 4], 50) == 2.5
    spread = describe([2.0, 4.0, 6.0])
    assert (spread.mean, spread.median, spread.min, spread.max) == (4.0, 4.0, 2.0, 6.0)
