"""Shared fixtures: real stores only, and the layout of a parallel run.

``store`` runs a test on both backends: a fresh SQLite file and the session's Neo4j server
(started once from ``tools/neo4j-devserver`` on free ports, unless
``SONALITY_TEST_NEO4J_URI`` names a running server). Neo4j data is wiped between tests;
the schema stays. ``sqlite_store`` is a copy of a file migrated once per session.

Parallel runs (pytest-xdist; ``make pytest`` uses ``-n 2 --dist loadfile``):

- each worker is a pytest session of its own, so session fixtures, the Neo4j server
  among them, exist once per worker; a test sees only its own worker's server, and the
  tests of one worker run one at a time, so wiping between tests stays safe;
- a worker takes a whole file at a time (:func:`work_unit`), or a whole folder for those
  in ``ONE_WORKER`` (``tests/server``: its two ``sonality serve`` processes start once);
  files holding a ``slow`` or ``browser`` test go first, then the larger files;
- ``SONALITY_TEST_NEO4J_URI`` with several workers is refused (they would wipe each
  other's data): run against your own server with ``-p no:xdist`` (or ``-n 0``).

Markers: ``neo4j`` (needs the server), ``browser`` (headless Chromium), ``reliability``
(``tests/reliability``), ``slow`` (long; its file is handed out first) and ``soak`` (a
soak test of minutes: ``make pytest`` runs ``-m "not soak"`` on the workers and, beside
it, ``-m soak`` as a session of its own bounded by ``SOAK_TIMEOUT``).
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
EMBEDDING_DIMENSIONS = 64
_SERVER_INFO: dict[str, Any] = {}


@contextmanager
def collector_held() -> Iterator[None]:
    """The garbage collector held off for the block. For ``ast.parse``: on CPython 3.11, a
    collection that runs inside the parser and finds an object whose finaliser warns (an
    unclosed socket some test left, with this suite's warnings as errors) breaks the
    parser's recursion count, ``SystemError: AST constructor recursion depth mismatch``
    (python/cpython#106905); it failed ``tests/test_layers.py`` in a CI run. No collection
    is forced before it: late in a worker's run one costs about half a second, and a test
    that parsed the package file by file took 75 s."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` under :func:`collector_held`."""
    with collector_held():
        return ast.parse(source, filename=filename)


def _load_devserver() -> Any:
    path = ROOT / "tools" / "neo4j-devserver" / "devserver.py"
    spec = importlib.util.spec_from_file_location("sonality_devserver", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["sonality_devserver"] = module
    spec.loader.exec_module(module)
    return module


TEST_SERVER_SETTINGS = {
    "dbms.cypher.min_replan_interval": "1h",
    "internal.cypher.use_parameter_size": "false",
}
"""The suite's server plans a statement once and keeps the plan. The tests empty the
database between tests and refill it, so with Neo4j's default (replan a cached statement
when the statistics it was planned on have drifted, at most every 10 s) it replanned its
busiest statements about every 10 s all run long: 613 replans in 36 minutes on one worker's
server, at 0.1-8 s of the server's CPU each (the enrichment commit and context read plan
slowest). A test about plan choice asks for current statistics and a fresh plan itself
(``db.prepareForReplanning`` in tests/neo4j/test_query_plans.py).

Nor does it plan a statement again for each size of its parameters. By default Neo4j 5
keys its plan cache on the parameters' types *and* sizes (a string's length, a list's
count, in buckets), so the reflection commit, planned in about a second on this server,
was planned again for 2 and for 6 insight ids, for a short and a long user text: a trace of
``tests/contract``, ``tests/pipeline`` and the reflection pipeline's Neo4j tests found 283
(statement, parameter shape) pairs for 175 statements, and first runs of a shape took 83 s
of the server's 157 s. ``internal.cypher.use_parameter_size=false`` leaves the sizes out of
the key (and out of the planner's estimates; no test here depends on a size-driven plan:
the plan tests ask for index use): the server's CPU for those tests fell from 164-171 s
to 136 s, alternating runs on 28 Nov 2026. In the whole suite the gain drowns in the
machine's drift (the three workers' servers: 782 s of CPU against 797 s; pytest 13 min 54 s
against 15 min 15 s, at similar loads). A production server keeps Neo4j's default."""


TEST_SERVER_JAVA_OPTS = "-Xms64m -Xmx1g -XX:TieredStopAtLevel=1"
"""The dev server's heap options (its defaults) and the JIT's first tier only. A suite's
server lives minutes and runs many statements a few times each: the second tier (C2) spent
about 140 s of CPU per worker's server compiling them in a 36-minute run. With C1 alone,
``pytest -p no:xdist tests/contract -m neo4j`` took 103 s of CPU and 244 s of wall time
against 133 s and 273 s, the same morning at the same load."""


@pytest.fixture(scope="session")
def neo4j_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bolt URI of a real Neo4j 5.26 server for the whole session (each xdist worker is a
    session of its own, so each worker has its own server)."""
    external = os.environ.get("SONALITY_TEST_NEO4J_URI")
    if external:
        yield external
        return
    devserver = _load_devserver()
    log = tmp_path_factory.mktemp("neo4j") / "devserver.log"
    # Two workers start their servers at the same moment on a two-core machine: wait
    # longer than the library's 180 s before calling a slow start a failure.
    server = devserver.DevServer.start(
        log_path=log, timeout=600, config=TEST_SERVER_SETTINGS, java_opts=TEST_SERVER_JAVA_OPTS
    )
    _SERVER_INFO.update(startup_seconds=server.startup_seconds, rss=server.rss_bytes())
    try:
        yield server.bolt_uri
    finally:
        server.stop()


@pytest.fixture(scope="session")
def neo4j_auth() -> tuple[str, str] | None:
    user = os.environ.get("SONALITY_TEST_NEO4J_USER")
    password = os.environ.get("SONALITY_TEST_NEO4J_PASSWORD")
    return (user, password) if user and password else None


@pytest.fixture(scope="session")
async def neo4j_session_store(
    neo4j_uri: str, neo4j_auth: tuple[str, str] | None
) -> AsyncIterator[Any]:
    """One migrated Neo4jStore shared by the session's Neo4j tests."""
    from sonality.storage.neo4j.store import Neo4jStore

    store = await Neo4jStore.open(
        neo4j_uri, auth=neo4j_auth, embedding_dimensions=EMBEDDING_DIMENSIONS
    )
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()


class DroppedSchema:
    """The session's Neo4j store while a test has left it without its schema
    (``tests/neo4j``'s ``fresh``). The schema is put back by the next test that needs it,
    not after every such test: most of them are followed by another that drops it again
    (a migration from nothing is the server's dearest work in those files)."""

    store: Any = None

    @classmethod
    async def restore(cls) -> None:
        if cls.store is not None:
            await cls.store.migrate()
            cls.store = None


@pytest.fixture
async def neo4j_store(neo4j_session_store: Any) -> Any:
    """The session's Neo4jStore, emptied before the test (schema kept)."""
    await neo4j_session_store.delete_all()
    await DroppedSchema.restore()
    return neo4j_session_store


@pytest.fixture(scope="session")
async def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per session (closed, so it is one self-contained file)."""
    from sonality.storage.sqlite.store import SqliteStore

    path = tmp_path_factory.mktemp("sqlite-template") / "sonality.db"
    store = await SqliteStore.open(path, embedding_dimensions=EMBEDDING_DIMENSIONS)
    try:
        await store.migrate()
    finally:
        await store.close()
    return path


@pytest.fixture
async def sqlite_store(tmp_path: Path, sqlite_template: Path) -> AsyncIterator[Any]:
    """A migrated SqliteStore on a fresh file: a copy of the session's migrated file (a
    second ``migrate`` finds nothing to apply, as on any current store)."""
    from sonality.storage.sqlite.store import SqliteStore

    path = tmp_path / "sonality.db"
    shutil.copyfile(sqlite_template, path)
    store = await SqliteStore.open(path, embedding_dimensions=EMBEDDING_DIMENSIONS)
    assert await store.migrate() == []
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def opened() -> AsyncIterator[list[Any]]:
    """Stores a test opens itself (closed afterwards)."""
    stores: list[Any] = []
    yield stores
    for store in stores:
        await store.close()


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store(request: pytest.FixtureRequest) -> Any:
    """Each test using it runs once per backend."""
    return request.getfixturevalue(f"{request.param}_store")


@asynccontextmanager
async def facades(store: Any, clock: Any) -> AsyncIterator[Callable[..., Any]]:
    """A maker of facades over ``store`` and ``clock`` (a hash embedder, and a token count
    of a quarter of the characters unless given); each is closed on the way out, so one a
    failed test left open does not hold its model client (and its sockets) into the next
    test."""
    from sonality.llm.embedders import HashEmbedder
    from sonality.service import Sonality

    made: list[Sonality] = []

    def make(llm: Any, **kwargs: Any) -> Sonality:
        kwargs.setdefault("count_tokens", lambda text: max(1, len(text) // 4))
        embedder = HashEmbedder(EMBEDDING_DIMENSIONS)
        made.append(Sonality(store=store, llm=llm, embedder=embedder, clock=clock, **kwargs))
        return made[-1]

    try:
        yield make
    finally:
        for app in made:
            await app.close()


@pytest.fixture
def t0() -> datetime:
    return datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


# ----------------------------------------------------------------------------- xdist


def pytest_configure(config: pytest.Config) -> None:
    # every dev server a test starts (the session's, and those of the outage, restart,
    # browser and 2026 tests) runs with the JIT's first tier only: see TEST_SERVER_JAVA_OPTS
    os.environ.setdefault("NEO4J_DEVSERVER_JAVA_OPTS", TEST_SERVER_JAVA_OPTS)
    workers = config.getoption("numprocesses", default=None)
    if os.environ.get("SONALITY_TEST_NEO4J_URI") and workers not in (None, 0, 1):
        raise pytest.UsageError(
            "SONALITY_TEST_NEO4J_URI names one server, and the tests empty it between tests: "
            "several xdist workers would empty each other's data; run in one process "
            "(-p no:xdist or -n 0)"
        )


def work_unit(nodeid: str) -> str:
    """The unit of work an xdist worker takes whole under ``--dist loadfile``: the test's
    file, except that the files of one of ``ONE_WORKER``'s groups go to one worker."""
    path = nodeid.split("::", 1)[0]
    return next((unit for unit, paths in ONE_WORKER.items() if path.startswith(paths)), path)


SCHEMA_UNIT = "schema"

ONE_WORKER = {
    SCHEMA_UNIT: (
        "tests/neo4j/test_cli_on_neo4j.py",
        "tests/neo4j/test_migrations.py",
        "tests/neo4j/test_neo4j_upgrade.py",
        "tests/neo4j/test_vector_index.py",
        "tests/neo4j/test_query_plans.py",
        "tests/neo4j/test_plan_cache_shapes.py",
        "tests/contract/test_round_trips.py",
    ),
    "server": ("tests/server/",),
    "served reliability": (
        "tests/reliability/test_batches.py",
        "tests/reliability/test_busy_conversation.py",
        "tests/reliability/test_deadlines.py",
    ),
}
"""Groups of files that go to one worker as one unit:

- ``schema``: the files that change the session server's schema (drop it, migrate from
  nothing, make and drop the vector index) or empty its plan cache
  (``db.prepareForReplanning``, ``db.clearQueryCaches``). Either makes the server compile
  every statement again on its next run: measured on the suite's 5.26 server, a statement
  that ran from the cache in 51-77 ms took 1.5-4.1 s after an index or a constraint was
  made or dropped. Spread over the workers, each such file made its worker's server
  compile again every statement the files after it ran; in one unit, handed out first,
  the other workers' servers compile each statement once;
- ``server`` and ``served reliability``: files whose tests share session fixtures too dear
  to set up on every worker (``served``: a ``sonality serve`` per store, each started after
  a wipe and a key made by the CLI): the server tests are one unit, the reliability files
  that use ``served`` another (three files on three workers started it three times)."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with :func:`work_unit`'s units, handed out in the order the
    workers collected them (see ``pytest_collection_modifyitems``)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByUnit(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On an xdist worker, order the units of work: the ``schema`` unit first (see
    ``ONE_WORKER``: its worker's server then compiles the other units' statements once),
    then longest first, so that no long file is left for the end while the other workers
    sit idle: the units holding a ``slow`` or ``browser`` test, then the rest by their
    number of tests. Runs last, after pytest grouped the tests by their parametrised
    session fixtures; the order inside a unit stays as pytest left it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)

    def rank(unit: list[pytest.Item]) -> tuple[bool, bool, int]:
        schema = work_unit(unit[0].nodeid) == SCHEMA_UNIT
        long = any(item.get_closest_marker(m) for item in unit for m in ("slow", "browser"))
        return (not schema, not long, -len(unit))

    items[:] = [item for unit in sorted(units.values(), key=rank) for item in unit]


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and _SERVER_INFO:
        workeroutput["neo4j_devserver"] = dict(_SERVER_INFO)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    info = getattr(node, "workeroutput", {}).get("neo4j_devserver")
    if info:
        _WORKER_SERVERS[str(node.gateway.id)] = info


_WORKER_SERVERS: dict[str, dict[str, Any]] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    servers = dict(_WORKER_SERVERS)
    if _SERVER_INFO:
        servers[""] = _SERVER_INFO
    for worker, info in sorted(servers.items()):
        terminalreporter.write_line(
            f"neo4j devserver{f' ({worker})' if worker else ''}: "
            f"startup {info['startup_seconds']:.1f}s, rss {info['rss'] / 2**20:.0f} MiB"
        )
