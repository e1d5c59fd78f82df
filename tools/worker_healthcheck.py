#!/usr/bin/env python3
"""Container health check for ``sonality worker --heartbeat-file PATH`` (standard library only,
so it answers in milliseconds without importing Sonality).

The worker touches its heartbeat file after every scan that reached the store, and scans every
``SONALITY_WORKER_SCAN_SECONDS`` (30 by default). Healthy (exit 0) while the file is younger
than three scan intervals plus 10 s; unhealthy (exit 1, one line on stderr) when it is older or
missing: the worker is stuck, its event loop blocked, or the store unreachable scan after scan.

    sonality-worker-healthcheck [PATH] [--max-age SECONDS]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

DEFAULT_PATH = "/tmp/sonality-worker.heartbeat"


def max_age_seconds() -> float:
    """Three scan intervals (from the worker's own environment) plus 10 s of slack."""
    try:
        scan = float(os.environ.get("SONALITY_WORKER_SCAN_SECONDS") or 30)
    except ValueError:
        scan = 30.0
    return 3 * scan + 10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", default=DEFAULT_PATH)
    parser.add_argument("--max-age", type=float, default=None, help="seconds")
    ns = parser.parse_args(argv)
    limit = ns.max_age if ns.max_age is not None else max_age_seconds()
    try:
        age = time.time() - os.stat(ns.path).st_mtime
    except OSError as exc:
        print(f"unhealthy: no heartbeat ({exc.strerror}: {ns.path})", file=sys.stderr)
        return 1
    if age > limit:
        print(f"unhealthy: last heartbeat {age:.0f}s ago (limit {limit:.0f}s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
