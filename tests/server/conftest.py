"""Real servers for the server tests: ``sonality serve`` in a subprocess (uvicorn on a
free port) on each store, with the scripted model of ``tests/server/model.py`` plugged in
through ``--llm``, and an admin key made with ``sonality key create``.

One server per store for the whole session (``served``), shared by every module: each
module works on personas of its own (``ada``, ``cleo``, ``mia``, ``zoe``, ``alpha``/``beta``,
``duo``/``trio``) and with keys bound to them where it counts what a key sees, so no module
depends on another's data or order. pytest groups the tests of one store's server
together, so Neo4j is wiped once, before that server starts, and nothing wipes it while
the server runs. Its stderr (the server's logs) is kept in a file the security tests
read.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EMBEDDING_DIMENSIONS, ROOT

SONALITY = str(Path(sys.executable).with_name("sonality"))
MODEL = "tests.server.model:factory"
NEO4J_PASSWORD = "neo4j-pw-4b1d9c"
"""Sent to the (auth-less) test server so the tests can show it never leaks."""
PLAIN_HTTP = ssl.create_default_context()
"""The TLS context of every httpx client the tests make (``verify=PLAIN_HTTP``). Every
URL here is plain ``http://``, yet an httpx client builds a context of its own, loading
the CA bundle: 50 ms of CPU each, taken from the servers under test. A poll of a
starting server every 0.2 s, or a fresh client every 0.05 s until one is refused,
spent a core on it."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def store_env(store_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SONALITY_")}
    env.update(
        SONALITY_STORE=store_url,
        SONALITY_EMBEDDING_DIMENSIONS=str(EMBEDDING_DIMENSIONS),
        SONALITY_LOG_FORMAT="json",
        SONALITY_LOG_LEVEL="INFO",
        SONALITY_COOLING_PERIOD="0",
        # an inline record waits for its enrichment as long as a loaded CI machine needs:
        # the tests reading enriched state must not see ``pending`` because the default
        # 10 s ran out (the deadline's own tests set theirs)
        SONALITY_RECORD_DEADLINE_SECONDS="120",
        PYTHONPATH=str(ROOT),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    if not store_url.startswith("sqlite"):
        env["SONALITY_NEO4J_PASSWORD"] = NEO4J_PASSWORD
    return env


def cli(env: dict[str, str], *args: str) -> Any:
    """Run ``sonality ARGS --json`` and return its JSON output."""
    done = subprocess.run(
        [SONALITY, *args, "--json"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@dataclass
class Served:
    """A running ``sonality serve`` process."""

    url: str
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes]
    admin: str = ""
    backend: str = ""
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token or self.admin}"} if token != "" else {}
        kwargs.setdefault("verify", PLAIN_HTTP)
        return httpx.Client(base_url=self.url, headers=headers, timeout=120, **kwargs)

    def logs(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(
    env: dict[str, str],
    log: Path,
    *args: str,
    port: int | None = None,
    model: str | None = MODEL,
) -> Served:
    """Start ``sonality serve`` and wait until ``/healthz`` answers; ``model`` is the
    ``--llm`` factory (None: the model the settings in ``env`` name)."""
    port = port or free_port()
    llm = ["--llm", model] if model is not None else []
    with log.open("ab") as out:
        process = subprocess.Popen(
            [SONALITY, "serve", "--port", str(port), *llm, *args],
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    served = Served(url=f"http://127.0.0.1:{port}", env=env, log=log, process=process)
    deadline = time.monotonic() + 90
    with httpx.Client(timeout=2, verify=PLAIN_HTTP) as poll:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {served.logs()[-3000:]}")
            try:
                if poll.get(f"{served.url}/healthz").status_code == 200:
                    return served
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    served.stop()
    raise AssertionError(f"the server did not start: {served.logs()[-3000:]}")


@pytest.fixture(scope="session", params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """A server per store for the session, with an admin key in ``served.admin``."""
    folder = tmp_path_factory.mktemp(f"serve-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite:///{folder / 'sonality.db'}"
    else:
        request.getfixturevalue("neo4j_session_store")  # migrated once per session
        url = request.getfixturevalue("neo4j_uri")
        wipe = subprocess.run(
            [sys.executable, "-c", _WIPE, url], env=store_env(url), capture_output=True, text=True
        )
        assert wipe.returncode == 0, wipe.stderr
    env = store_env(url)
    admin = cli(env, "key", "create", "--scope", "admin", "--name", "tests")
    server = start(env, folder / "server.log")
    server.admin = admin["token"]
    server.backend = request.param
    try:
        yield server
    finally:
        server.stop()


_WIPE = """
import asyncio, sys
from sonality.config import Settings
from sonality.wiring import open_store

async def main():
    store = await open_store(Settings(store=sys.argv[1]))
    await store.delete_all()
    await store.close()

asyncio.run(main())
"""
