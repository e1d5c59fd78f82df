"""Build the sdist, build the wheel *from that sdist* (as pip and ``python -m build`` do, so a
file the sdist leaves out breaks this check, not a user's install), install the wheel in a
clean virtualenv, and prove the installed package (not the source tree) carries everything
it loads at run time: every Cypher query, every migration, every prompt, the samples and the
Neo4j Browser assets; then run the main job from it on a temp SQLite file.

    python tools/check_wheel.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import sys
from pathlib import Path
import sonality
from sonality.resources import resource_dir
from sonality.storage.migrations import discover
from sonality.storage.neo4j.cypher import Query, load
from sonality.llm.prompts import PromptLibrary

site = Path(sonality.__file__).resolve().parent
for kind in ("cypher", "prompts", "migrations", "samples", "browser"):
    folder = resource_dir(kind)
    assert site in folder.parents, f"{kind} loaded from {folder}, not the installed package"
queries = [load(q) for q in Query]
assert all(text.strip() for text in queries)
migrations = {
    backend: discover(resource_dir("migrations") / backend, suffix)
    for backend, suffix in (("neo4j", ".cypher"), ("sqlite", ".sql"))
}
assert all(steps and all(s.text.strip() for s in steps) for steps in migrations.values())
prompts = PromptLibrary().names()
assert prompts
from sonality.eval.datasets import DATA_DIR, load_curate, load_pressure, load_retention
assert site in DATA_DIR.parents, f"eval data loaded from {DATA_DIR}, not the installed package"
curate = load_curate()
assert len(curate.cases) == 80 and curate.trivia and curate.preferences and curate.facts
assert load_pressure().topics and load_retention().script.traits
assert (DATA_DIR / "curate" / "README.md").is_file()
assert {"judge_curate", "judge_stance", "judge_traits"} <= set(prompts)
browser = resource_dir("browser")
assert (browser / "sonality.grass").is_file() and list((browser / "queries").glob("*.cypher"))
print(f"installed package: {len(queries)} queries, "
      f"{len(migrations['neo4j'])} + {len(migrations['sqlite'])} migrations, "
      f"{len(prompts)} prompts, {len(curate.cases)} CuRaTe cases, browser assets")
"""


def uv() -> str:
    """The uv of this virtualenv (the dev extra installs it), or one on PATH."""
    beside = Path(sys.executable).with_name("uv")
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        raise SystemExit("check_wheel needs uv: pip install uv (the dev extra has it)")
    return found


def run(cmd: list[str], **kw: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def wheel_sources() -> list[str]:
    """Top-level paths the wheel is built from (pyproject's hatch wheel target + readme)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    return sorted(
        {*wheel["packages"], *wheel.get("force-include", {}), config["project"]["readme"]}
    )


def check_sdist(sdist: Path) -> None:
    """Every source the wheel reads is in the sdist (the wheel build would fail otherwise)."""
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    top = {name.split("/", 2)[1] for name in names if name.count("/") >= 1}
    missing = [source for source in wheel_sources() if source not in top]
    if missing:
        raise SystemExit(f"{sdist.name} lacks {missing}: add them to the sdist include list")
    print(f"{sdist.name}: {len(names)} entries, has {', '.join(wheel_sources())}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sonality-wheel-") as tmp:
        work = Path(tmp)
        dist = work / "dist"
        # build's isolated environments and the clean virtualenv are made with uv: with pip
        # they took about 70 s of CPU of a run, beside the test suite (28 Nov 2026).
        build = [sys.executable, "-m", "build", "--installer", "uv"]
        run([*build, "--sdist", "--outdir", str(dist), str(ROOT)], stdout=subprocess.DEVNULL)
        [sdist] = dist.glob("sonality-*.tar.gz")
        check_sdist(sdist)
        # The wheel comes from the unpacked sdist alone, never from the work tree.
        unpacked = work / "sdist"
        with tarfile.open(sdist) as tar:
            tar.extractall(unpacked, filter="data")
        [source] = unpacked.iterdir()
        run([*build, "--wheel", "--outdir", str(dist), str(source)], stdout=subprocess.DEVNULL)
        [wheel] = dist.glob("sonality-*.whl")
        run([uv(), "venv", "--quiet", "--python", sys.executable, str(work / "venv")])
        py = str(work / "venv" / "bin" / "python")
        run([uv(), "pip", "install", "--quiet", "--python", py, str(wheel)])
        env = {k: v for k, v in os.environ.items() if not k.startswith("SONALITY_")}
        env |= {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "SONALITY_STORE": f"sqlite:///{work / 'demo.db'}",
            "SONALITY_LOG_FORMAT": "json",
            "SONALITY_LOG_LEVEL": "WARNING",
        }
        run([py, "-c", PROBE], cwd=work, env=env)
        run([str(work / "venv" / "bin" / "sonality"), "--version"], cwd=work, env=env)
        run(
            [str(work / "venv" / "bin" / "sonality"), "demo"],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        print("wheel check passed (sdist -> wheel -> clean virtualenv)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
