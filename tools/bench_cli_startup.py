"""Benchmark how fast the command line answers ``--help``: ``sonality --help`` and every
command's ``--help``, each a fresh process, against floors measured in the same run and
interleaved with it (so machine load hits all rows alike): a bare interpreter, and one
that imports click (the one library ``--help`` needs). Prints a table.

    python tools/bench_cli_startup.py                  # 15 samples of each
    python tools/bench_cli_startup.py --samples 40
    git archive main sonality | tar -x -C /tmp/base && \
      python tools/bench_cli_startup.py --baseline /tmp/base   # adds that tree's --help

Target: ``sonality --help`` under 0.3 s. The ``over floor`` column is the time Sonality
itself adds to starting Python, which is what the code controls; ``x click`` is the ratio to
the import-click floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchkit import pct  # noqa: E402

TARGET_SECONDS = 0.3


def _sonality() -> list[str]:
    script = Path(sys.executable).with_name("sonality")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sonality"]


def _commands() -> list[list[str]]:
    from sonality.cli import main

    return [[], *([name] for name in main.commands)]


def _time(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, env=os.environ | {"NO_COLOR": "1"})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a source tree (holding sonality/) whose `sonality --help` is measured too",
    )
    args = parser.parse_args()

    rows: dict[str, list[str]] = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "python -c 'import click'": [sys.executable, "-c", "import click"],
    }
    if args.baseline is not None:  # both trees started the same way, for a fair ratio
        for label, tree in (("this tree", ROOT), ("baseline", args.baseline.resolve())):
            rows[f"{label}: python -c main(['--help'])"] = [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {str(tree)!r}); "
                "from sonality.cli import main; main(['--help'], prog_name='sonality')",
            ]
    for command in _commands():
        rows[" ".join(["sonality", *command, "--help"])] = [*_sonality(), *command, "--help"]
    timings: dict[str, list[float]] = {name: [] for name in rows}
    for argv in rows.values():  # warm the file cache once
        _time(argv)
    for _ in range(args.samples):
        for name, argv in rows.items():
            timings[name].append(_time(argv))

    floor = statistics.median(timings["python -c pass (floor)"])
    click_floor = statistics.median(timings["python -c 'import click'"])
    print(f"{args.samples} samples each, interleaved; {os.cpu_count()} cpus")
    print(f"{'':42} {'median':>8} {'p90':>8} {'over floor':>11} {'x click':>8}")
    for name, values in timings.items():
        median = statistics.median(values)
        print(
            f"{name:42} {median:8.3f} {pct(values, 0.9):8.3f} {median - floor:11.3f} "
            f"{median / click_floor:8.2f}"
        )
    top = statistics.median(timings["sonality --help"])
    verdict = "met" if top < TARGET_SECONDS else "MISSED"
    print(f"sonality --help: median {top:.3f} s, target {TARGET_SECONDS} s: {verdict}")


if __name__ == "__main__":
    main()
