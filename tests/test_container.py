"""The image and the packages stay in step: what the Dockerfile copies, what .dockerignore lets
into the build context and what pyproject.toml builds the wheel and the sdist from; the wheel
builds from exactly the Dockerfile's COPY set; the worker's health check reads a heartbeat the
worker really writes. (No Docker engine runs here: these check everything short of it.)"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from tools.check_wheel import wheel_sources

ROOT = Path(__file__).resolve().parent.parent
HEALTHCHECK = ROOT / "tools" / "worker_healthcheck.py"


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _context_copies() -> list[str]:
    """Sources of every COPY/ADD from the build context (not ``--from`` another stage)."""
    sources: list[str] = []
    for name, args in _instructions():
        if name not in ("COPY", "ADD"):
            continue
        words = json.loads(args) if args.startswith("[") else shlex.split(args)
        flags = [w for w in words if w.startswith("--")]
        if any(f.startswith("--from=") for f in flags):
            continue
        paths = [w for w in words if not w.startswith("--")]
        sources += [p.rstrip("/").removeprefix("./") for p in paths[:-1]]
    return sources


def _ignore_patterns() -> list[str]:
    text = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """Docker's pattern syntax: ``*`` and ``?`` stay within a path segment, ``**`` spans any."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether ``.dockerignore`` keeps ``path`` out of the build context: the last pattern that
    matches the path or one of its parent folders decides, ``!`` patterns re-include."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for raw in patterns:
        negate = raw.startswith("!")
        regex = _pattern_regex(raw.removeprefix("!").strip("/").removeprefix("./"))
        if any(regex.match(prefix) for prefix in prefixes):
            excluded = not negate
    return excluded


def _files_under(source: str) -> list[str]:
    root = ROOT / source
    if root.is_file():
        return [source]
    return [
        p.relative_to(ROOT).as_posix()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    ]


def test_dockerfile_copies_every_source_the_wheel_is_built_from() -> None:
    """The image's COPY set holds pyproject.toml, the package, the readme and every folder
    pyproject.toml force-includes (the missing ``browser/`` broke ``pip wheel .`` in Docker)."""
    copied = set(_context_copies())
    needed = {"pyproject.toml", *wheel_sources()}
    assert needed <= copied, sorted(needed - copied)


def test_sdist_includes_every_source_the_wheel_is_built_from() -> None:
    """The sdist include list covers the package and every force-included folder, so a wheel
    built from the sdist (pip, ``python -m build``) finds them all."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    included = set(config["tool"]["hatch"]["build"]["targets"]["sdist"]["include"])
    assert set(wheel_sources()) <= included, sorted(set(wheel_sources()) - included)


def test_dockerignore_lets_through_every_file_the_dockerfile_copies() -> None:
    """No file under a COPY source is excluded from the build context by ``.dockerignore``."""
    patterns = _ignore_patterns()
    files = [f for source in _context_copies() for f in _files_under(source)]
    assert len(files) > 50
    assert [f for f in files if _ignored(f, patterns)] == []


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        ".neo4j-data/data/databases/neo4j/neostore",
        ".neo4j-data-2026/devserver.log",
        "tools/neo4j-devserver/lib/5.26/neo4j-kernel-5.26.30.jar",
        "tools/neo4j-devserver/target/2026/neo4j-devserver.jsa",
        "tools/neo4j-devserver/jdk21/java-runtime/bin/java",
        "sonality/__pycache__/cli.cpython-311.pyc",
        ".mypy_cache/3.11/sonality/cli.data.json",
        "dist/sonality-0.1.0-py3-none-any.whl",
        "sonality.db",
        "tests/conftest.py",
    ],
)
def test_dockerignore_keeps_local_state_out_of_the_context(path: str) -> None:
    """The virtualenv, git data, the dev server's jars, Java runtime and data, caches, build
    output, local databases and the tests never reach the Docker daemon."""
    assert _ignored(path, _ignore_patterns())


def test_the_wheel_builds_from_exactly_the_docker_copy_set(tmp_path: Path) -> None:
    """``pip wheel`` succeeds in a folder holding only what the Dockerfile copies (after
    ``.dockerignore``), and the wheel carries the force-included resources."""
    context = tmp_path / "context"
    patterns = _ignore_patterns()
    for source in _context_copies():
        for name in _files_under(source):
            if not _ignored(name, patterns):
                target = context / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, target)
    out = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), "."],
        cwd=context,
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = out.glob("sonality-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    for resource in ("browser/sonality.grass", "migrations/neo4j/V0001__constraints.cypher"):
        assert f"sonality/_resources/{resource}" in names


def test_dependency_layer_installs_exactly_the_runtime_dependencies(tmp_path: Path) -> None:
    """The Dockerfile's dependency stage, run as written in a folder holding only
    pyproject.toml, lists exactly ``[project].dependencies``, the ``server`` extra (the
    image runs ``sonality serve`` too) and the ``rust`` extra for ``pip wheel -r``."""
    [run] = [args for name, args in _instructions() if name == "RUN" and "requirements.txt" in args]
    listing = run.split("&&")[0]
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    subprocess.run(
        ["sh", "-c", listing], cwd=tmp_path, env={**os.environ, "PATH": path}, check=True
    )
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = (tmp_path / "requirements.txt").read_text(encoding="utf-8").splitlines()
    project = config["project"]
    extras = project["optional-dependencies"]
    assert listed == project["dependencies"] + extras["server"] + extras["rust"]
    assert "-r requirements.txt" in run


def _health(path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK), str(path), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=30,
    )


def test_healthcheck_fails_on_a_missing_or_stale_heartbeat(tmp_path: Path) -> None:
    """The worker is unhealthy without a heartbeat file or when its last touch is older than
    three scan intervals + 10 s; healthy just after a touch."""
    beat = tmp_path / "heartbeat"
    missing = _health(beat)
    assert missing.returncode == 1 and "no heartbeat" in missing.stderr
    beat.touch()
    assert _health(beat, SONALITY_WORKER_SCAN_SECONDS="30").returncode == 0
    old = time.time() - 3 * 30 - 11
    os.utime(beat, (old, old))
    stale = _health(beat, SONALITY_WORKER_SCAN_SECONDS="30")
    assert stale.returncode == 1 and "last heartbeat" in stale.stderr
    assert _health(beat, SONALITY_WORKER_SCAN_SECONDS="60").returncode == 0


def test_worker_scans_keep_its_heartbeat_fresh(tmp_path: Path) -> None:
    """``sonality worker --heartbeat-file`` touches the file on every scan, so the health check
    passes while it runs and fails once it has stopped scanning."""
    beat = tmp_path / "worker.heartbeat"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SONALITY_")},
        "SONALITY_STORE": f"sqlite:///{tmp_path / 'sonality.db'}",
        "SONALITY_LOG_FORMAT": "json",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    cli = [sys.executable, "-m", "sonality"]
    subprocess.run([*cli, "migrate"], env=env, check=True, capture_output=True, timeout=120)
    worker = subprocess.Popen(
        [*cli, "worker", "--scan-seconds", "0.2", "--heartbeat-file", str(beat)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not beat.exists():
            assert worker.poll() is None, worker.communicate()[1]
            assert time.monotonic() < deadline, "no heartbeat after 90 s"
            time.sleep(0.1)
        first = beat.stat().st_mtime_ns
        while beat.stat().st_mtime_ns == first:
            assert time.monotonic() < deadline, "the heartbeat was touched only once"
            time.sleep(0.05)
        assert _health(beat, "--max-age", "3").returncode == 0
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
    time.sleep(3.1)  # no scan touches it any more
    stopped = _health(beat, "--max-age", "3")
    assert stopped.returncode == 1 and "last heartbeat" in stopped.stderr
