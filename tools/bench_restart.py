"""A Neo4j restart through the facade (issue 29): ``--writers`` tasks record into one
persona (``enrich=False``, each into a conversation of its own) while a dev server of
this tool's own is killed (SIGKILL) and, ``--outage`` seconds later, restarted on its
data. A driver of the tool's own asks ``RETURN 1`` (2 s) every 0.2 s once the Bolt port
accepts connections. Prints the timeline (kill, port open, ``RETURN 1`` answering), the
longest call and the longest failed call against the bound (``retry + connect`` seconds,
+1 s), and the recovery: from ``RETURN 1`` answering, and from the store's warm-up done
(the executor's outage over), to the first acknowledged record.

    python tools/bench_restart.py [--writers 8] [--outage 5] [--after 40]

Exit 1 when a call passes its bound by more than a second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(TOOLS.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import neo4j  # noqa: E402
from benchkit import load_devserver  # noqa: E402

from sonality.llm.embedders import HashEmbedder  # noqa: E402
from sonality.service import Sonality  # noqa: E402
from sonality.storage.neo4j.store import Neo4jStore  # noqa: E402

RETRY, CONNECT, DIMENSIONS = 5.0, 5.0, 64


async def answers_a_query(uri: str) -> bool:
    driver = neo4j.AsyncGraphDatabase.driver(uri, connection_timeout=1)
    try:
        async with asyncio.timeout(2):
            await driver.execute_query("RETURN 1", database_="neo4j")
    except Exception:
        return False
    finally:
        await driver.close()
    return True


async def run(opts: argparse.Namespace, folder: Path) -> bool:
    devserver = load_devserver()
    server = devserver.DevServer.start(data_dir=folder / "data", log_path=folder / "neo4j.log")
    holder = {"server": server}
    t0 = time.monotonic()

    def now() -> float:
        return time.monotonic() - t0

    marks: dict[str, float] = {}
    calls: list[tuple[float, float, str]] = []
    try:
        store = await Neo4jStore.open(
            server.bolt_uri,
            embedding_dimensions=DIMENSIONS,
            retry_seconds=RETRY,
            connect_seconds=CONNECT,
        )
        await store.migrate()
        app = Sonality(store=store, embedder=HashEmbedder(DIMENSIONS), owns_store=True)
        await app.create_persona("ada", name="Ada", core_identity="I am Ada.")
        stop = asyncio.Event()

        async def record(writer: int, n: int) -> Any:
            return await app.record(
                "ada",
                user_id=f"u{writer}",
                conversation_id=f"c{writer}",
                message=f"message {n}",
                response="Noted.",
                enrich=False,
            )

        for writer in range(opts.writers):  # compiled on the first server
            await record(writer, 0)

        async def writer_loop(writer: int) -> None:
            n = 1
            while not stop.is_set():
                started = now()
                try:
                    await asyncio.wait_for(record(writer, n), 300)
                    outcome = "ok"
                except Exception as exc:
                    outcome = f"{type(exc).__name__}: {str(exc)[:70]}"
                calls.append((started, now(), outcome))
                n += 1
                await asyncio.sleep(0.1)

        def restart() -> None:
            time.sleep(opts.outage)
            holder["server"] = devserver.DevServer.start(
                data_dir=folder / "data", bolt_port=server.bolt_port, log_path=folder / "neo4j.log"
            )
            marks["devserver ready"] = now()

        async def watch() -> None:
            while "RETURN 1 answers" not in marks:
                if "port open" not in marks:
                    try:
                        socket.create_connection(("127.0.0.1", server.bolt_port), 0.2).close()
                        marks["port open"] = now()
                    except OSError:
                        pass
                elif await answers_a_query(server.bolt_uri):
                    marks["RETURN 1 answers"] = now()
                await asyncio.sleep(0.2)

        health = store._db.health  # the executor's view: down, then warmed up

        async def warmed() -> None:
            while health.down_since is None:  # noqa: ASYNC110 (polls the executor's state)
                await asyncio.sleep(0.02)
            marks["store sees the outage"] = now()
            while health.down_since is not None:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            marks["warm-up done"] = now()

        warming = asyncio.create_task(warmed())
        tasks = [asyncio.create_task(writer_loop(w)) for w in range(opts.writers)]
        await asyncio.sleep(1)
        server.process.kill()
        server.process.wait()
        marks["killed"] = now()
        thread = threading.Thread(target=restart)
        thread.start()
        await asyncio.wait_for(watch(), 600)
        await asyncio.sleep(opts.after)
        stop.set()
        warming.cancel()
        await asyncio.gather(*tasks)
        thread.join()
        await app.close()
    finally:
        holder["server"].stop()

    bound = RETRY + CONNECT + 1
    back = marks["RETURN 1 answers"]
    after = [c for c in calls if c[1] >= marks["killed"]]
    longest = max(after, key=lambda c: c[1] - c[0])
    failed = [c for c in after if c[2] != "ok"]
    longest_failed = max((c[1] - c[0] for c in failed), default=0.0)
    first_ok = min((c[1] for c in after if c[2] == "ok" and c[1] >= back), default=None)
    for name, at in sorted(marks.items(), key=lambda m: m[1]):
        print(f"  {at:7.2f} s  {name}")
    print(f"  calls after the kill: {len(after)}, failed {len(failed)}")
    print(f"  longest call {longest[1] - longest[0]:.2f} s ({longest[2]}), bound {bound:g} s")
    print(f"  longest failed call {longest_failed:.2f} s")
    recovery = "none" if first_ok is None else f"{first_ok - back:.2f} s"
    print(f"  first acknowledged record after RETURN 1 answers: {recovery}")
    if "warm-up done" in marks:
        warm = marks["warm-up done"]
        print(f"  warm-up: {warm - back:.2f} s after RETURN 1 answers")
        # a call goes once its own statement is compiled: the first record may come first
        recovery = "none" if first_ok is None else f"{first_ok - warm:+.2f} s"
        print(f"  first acknowledged record from the warm-up's end: {recovery}")
    return max(c[1] - c[0] for c in after) <= bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--outage", type=float, default=5.0)
    parser.add_argument("--after", type=float, default=40.0, help="seconds after RETURN 1")
    opts = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        ok = asyncio.run(run(opts, Path(tmp)))
    print(f"load average {os.getloadavg()[0]:.1f}; {'ok' if ok else 'FAIL: a call over its bound'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
