"""Benchmark how fast ``sonality serve`` is ready, and what the first model call's import of
litellm costs. Prints a table.

    python tools/bench_serve_startup.py              # 3 starts, with --workers 1
    python tools/bench_serve_startup.py --samples 5 --workers 2

Each sample starts ``sonality serve --no-auth`` on a migrated SQLite store of its own and
polls ``/readyz`` every 20 ms: the wall time to the first answer, and the server process's
CPU (user + system, from ``/proc``) by then, which a loaded machine inflates least. The
floor, measured in the same run between the samples, is a fresh interpreter importing
FastAPI (what any FastAPI server pays); ``x floor`` is the ratio to it. The litellm row is
a fresh interpreter running ``sonality.llm.cost_map.import_litellm()`` (what the first
call through litellm pays; the direct OpenAI-compatible transport never does). The load
average is printed beside the figures. Target: ready within 3 s.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 3.0


def _sonality() -> str:
    return str(Path(sys.executable).with_name("sonality"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(code: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -c code`` in a fresh interpreter."""
    started = time.perf_counter()
    before = os.times()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return time.perf_counter() - started, cpu


def _serve_once(workers: int) -> tuple[float, float]:
    folder = tempfile.mkdtemp(prefix="sonality-bench-")
    env = {
        **os.environ,
        "SONALITY_STORE": f"sqlite:///{folder}/s.db",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    subprocess.run([_sonality(), "migrate"], env=env, check=True, capture_output=True)
    port = _free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [_sonality(), "serve", "--no-auth", "--port", str(port), "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the server exited {process.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code < 600:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        return time.perf_counter() - started, _cpu(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    ready, cpu, floors = [], [], []
    for _ in range(args.samples):
        floors.append(_timed("import fastapi")[0])
        wall, used = _serve_once(args.workers)
        ready.append(wall)
        cpu.append(used)
    litellm_wall, litellm_cpu = _timed(
        "from sonality.llm.cost_map import import_litellm; import_litellm()"
    )
    floor = statistics.median(floors)
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores; {args.samples} samples")
    print(f"{'':32} {'median s':>9} {'min s':>7} {'x floor':>8}")
    print(f"{'floor: python -c import fastapi':32} {floor:9.2f} {min(floors):7.2f} {1:8.1f}")
    label = f"serve --workers {args.workers}: /readyz"
    median = statistics.median(ready)
    print(f"{label:32} {median:9.2f} {min(ready):7.2f} {median / floor:8.1f}")
    print(f"{'  its CPU (user+system)':32} {statistics.median(cpu):9.2f} {min(cpu):7.2f}")
    print(f"{'first litellm import (wall)':32} {litellm_wall:9.2f}")
    print(f"{'  its CPU (user+system)':32} {litellm_cpu:9.2f}")
    verdict = "met" if median <= TARGET_SECONDS else "missed (see the CPU row on a loaded machine)"
    print(f"target: ready within {TARGET_SECONDS:.0f} s (the median start): {verdict}")


if __name__ == "__main__":
    main()
