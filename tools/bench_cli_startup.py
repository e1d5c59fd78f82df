"""Benchmark how fast the command line answers ``--help``: ``sonality --help`` and every
command's ``--help``, each a fresh process, against floors measured in the same run and
interleaved with it (so machine load hits all rows alike): a bare interpreter, and one
that imports click (the one library ``--help`` needs). Prints a table.

    python tools/bench_cli_startup.py                  # 15 samples of each
    python tools/bench_cli_startup.py --samples 40
    git archive main sonality | tar -x -C /tmp/base && \
      python tools/bench_cli_startup.py --baseline /tmp/base   # adds that tree's --help

    python tools/bench_cli_startup.py --reads          # read commands on a small store
    git archive main sonality migrations cypher prompts | tar -x -C /tmp/base && \
      python tools/bench_cli_startup.py --reads --baseline /tmp/base   # and that tree's

Target: ``sonality --help`` under 0.3 s; with ``--reads``, every read-only command
(``beliefs``, ``context``, ``export`` … on a fresh SQLite store of one persona and 30
exchanges, with ``SONALITY_MODEL`` set so a litellm import would show) under 0.5 s, also
reported as CPU seconds (user + system; median, and the minimum, which a loaded machine
inflates least) since a shared machine's wall time is mostly waiting. Before timing, the
package's bytecode is compiled (``compileall``), as installing the wheel does: with
``PYTHONDONTWRITEBYTECODE`` set (the Dockerfile and some shells set it) a source tree
would otherwise recompile every module on every command, ~0.1 s that no installed copy
pays; ``--source`` skips that step to show it. The load average is printed beside the
figures. The ``over floor`` column is the time Sonality
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

from tools.benchkit import pct  # noqa: E402  (importable as a script and from the tests)

TARGET_SECONDS = 0.3
READ_TARGET_SECONDS = 0.5
READS: list[list[str]] = [
    ["persona", "list"],
    ["persona", "show", "ada"],
    ["persona", "biography", "list", "ada"],
    ["beliefs", "--persona", "ada"],
    ["facts", "--persona", "ada", "--user", "u1"],
    ["episodes", "--persona", "ada"],
    ["context", "--persona", "ada", "--user", "u1", "--message", "what about tea?"],
    ["reflections", "--persona", "ada"],
    ["snapshot", "history", "--persona", "ada"],
    ["snapshot", "show", "--persona", "ada"],
    ["export", "--persona", "ada"],
    ["erasures", "--persona", "ada"],
    ["pending"],
    ["doctor"],
]
"""Every read-only command, as run on the seeded store: timed here, and run by
``tests/cli/test_cli_data.py`` (which imports this list) to check what they import."""


def _sonality() -> list[str]:
    script = Path(sys.executable).with_name("sonality")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sonality"]


def _commands() -> list[list[str]]:
    from sonality.cli import COMMANDS

    return [[], *([name] for name in COMMANDS)]


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
    parser.add_argument("--reads", action="store_true", help="time the read commands instead")
    parser.add_argument(
        "--source",
        action="store_true",
        help="do not compile the bytecode first (each run may compile from source)",
    )
    args = parser.parse_args()
    if not args.source:
        import compileall

        for tree in (ROOT, *([args.baseline] if args.baseline else [])):
            compileall.compile_dir(tree / "sonality", quiet=1)
    print("bytecode: " + ("as found (--source)" if args.source else "compiled first"))
    if args.reads:
        _reads(args.samples, args.baseline)
        return

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
    print(f"{args.samples} samples each, interleaved; {os.cpu_count()} cpus; {_load()}")
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


def _reads(samples: int, baseline: Path | None) -> None:
    """Time each read command on a small seeded store against the bare-interpreter floor."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(
            SONALITY_STORE=f"sqlite:///{tmp}/bench.db",
            SONALITY_MODEL="openai/gpt-4o-mini",
            SONALITY_LOG_LEVEL="WARNING",
        )
        _time([*_sonality(), "persona", "create", "ada", "--name", "Ada", "--identity", "Ada."])
        lines = "".join(
            f'{{"message": "message {i} about tea", "response": "reply {i}", "user_id": "u1"}}\n'
            for i in range(30)
        )
        (Path(tmp) / "seed.jsonl").write_text(lines, encoding="utf-8")
        no_model = os.environ | {"SONALITY_MODEL": ""}
        subprocess.run(
            [*_sonality(), "-q", "ingest", f"{tmp}/seed.jsonl", "--persona", "ada"],
            stdout=subprocess.DEVNULL,
            env=no_model,
            check=True,
        )
        rows = {"python -c pass (floor)": [sys.executable, "-c", "pass"]}
        rows |= {" ".join(["sonality", *r]): [*_sonality(), *r] for r in READS}
        if baseline is not None:  # both trees started the same way, for a fair ratio
            listed = (baseline / "sonality" / "cli" / "__init__.py").read_text("utf-8")
            common = [r for r in READS if f'"{r[0]}":' in listed]  # what both trees have
            for label, tree in (("this", ROOT), ("base", baseline.resolve())):
                rows |= {f"{label}: {' '.join(r)}": _in_tree(tree, r) for r in common}
        timings: dict[str, list[float]] = {name: [] for name in rows}
        cpu: dict[str, list[float]] = {name: [] for name in rows}
        for argv in rows.values():
            _time(argv)
        for _ in range(samples):
            for name, argv in rows.items():
                before = _children_cpu()
                timings[name].append(_time(argv))
                cpu[name].append(_children_cpu() - before)
    floor = statistics.median(timings["python -c pass (floor)"])
    print(
        f"{samples} samples each, interleaved; {os.cpu_count()} cpus; SONALITY_MODEL set; {_load()}"
    )
    print(f"{'':52} {'median':>7} {'p90':>7} {'over floor':>10} {'cpu':>6} {'cpu min':>7}")
    worst = worst_cpu = 0.0
    for name, values in timings.items():
        median, used = statistics.median(values), statistics.median(cpu[name])
        if name.startswith("sonality"):
            worst, worst_cpu = max(worst, median), max(worst_cpu, used)
        print(
            f"{name[:52]:52} {median:7.3f} {pct(values, 0.9):7.3f} {median - floor:10.3f} "
            f"{used:6.3f} {min(cpu[name]):7.3f}"
        )
    for label, value in (("wall", worst), ("cpu", worst_cpu)):
        verdict = "met" if value < READ_TARGET_SECONDS else "MISSED"
        print(f"slowest read command ({label}): median {value:.3f} s, target 0.5 s: {verdict}")
    if baseline is not None:
        for what, series in (("wall", timings), ("cpu", cpu)):
            this, base = (
                sum(statistics.median(v) for n, v in series.items() if n.startswith(prefix))
                for prefix in ("this:", "base:")
            )
            print(
                f"all reads, this tree / baseline ({what}): {this:.3f} / {base:.3f} s "
                f"= {this / base:.2f}"
            )


def _in_tree(tree: Path, args: list[str]) -> list[str]:
    """A command line running ``sonality ARGS`` from the source tree ``tree``."""
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); from sonality.cli import main; "
        f"main({args!r}, prog_name='sonality')"
    )
    return [sys.executable, "-c", code]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
