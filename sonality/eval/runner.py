"""What every evaluation shares: the run's identity, a resumable results file, running
units concurrently with progress, and the summary header.

Results file (``<output>/<eval>.jsonl``): the first line is ``{"run": {...}}`` — the
evaluation, model, judge, dataset hash, seed and options that define the run — and each
further line one finished unit with its ``key``. A rerun with the same identity skips the
keys already there and appends the rest; a rerun with another identity is refused
(``ConflictError``) unless ``fresh`` starts the file over. A unit that fails (the model is
down, a reply never validates) is not written, so the next run retries it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from sonality.errors import ConflictError, SonalityError, ValidationError
from sonality.eval.progress import Progress
from sonality.observability import get_logger

__all__ = ["ResultsFile", "RunInfo", "RunOutcome", "code_version", "run_units"]

log = get_logger("sonality.eval")

U = TypeVar("U")
_IDENTITY = ("eval", "model", "judge", "dataset_sha256", "seed", "options")


def code_version() -> str:
    """Sonality's version, plus the git commit when running from a checkout."""
    from sonality import __version__

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return __version__
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{'.dirty' if dirty else ''}"


class RunInfo(BaseModel):
    """Who and what produced a table: printed at the top of every summary."""

    model_config = ConfigDict(frozen=True)

    eval: str
    model: str | None
    judge: str | None
    date: str
    code_version: str
    dataset: str
    dataset_sha256: str
    seed: int
    store: str
    options: dict[str, Any]

    @classmethod
    def create(
        cls,
        eval_name: str,
        *,
        model: str | None,
        judge: str | None,
        dataset: str,
        dataset_sha256: str,
        seed: int,
        store: str,
        options: Mapping[str, Any],
    ) -> RunInfo:
        return cls(
            eval=eval_name,
            model=model,
            judge=judge,
            date=datetime.now(UTC).isoformat(timespec="seconds"),
            code_version=code_version(),
            dataset=dataset,
            dataset_sha256=dataset_sha256,
            seed=seed,
            store=store,
            options=json.loads(json.dumps(dict(options), default=str)),
        )

    def identity(self) -> dict[str, Any]:
        data = self.model_dump()
        return {k: data[k] for k in _IDENTITY}

    def header(self) -> str:
        """The summary's first lines, human-readable."""
        return (
            f"sonality eval {self.eval} · model {self.model or '-'} · judge {self.judge or '-'}\n"
            f"date {self.date} · code {self.code_version} · seed {self.seed} · "
            f"store {self.store}\n"
            f"data {self.dataset} · sha256 {self.dataset_sha256[:16]}"
        )


class ResultsFile:
    """The resumable results of one run (see the module docstring)."""

    def __init__(self, path: Path, info: RunInfo, *, fresh: bool = False) -> None:
        self.path = path
        self.info = info
        self.done: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not fresh:
            self._load()
        else:
            with path.open("w", encoding="utf-8") as f:
                f.write(json.dumps({"run": info.model_dump()}, ensure_ascii=False) + "\n")

    def _load(self) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        try:
            header = json.loads(lines[0])["run"] if lines else None
        except (ValueError, KeyError, TypeError):
            header = None
        if not isinstance(header, dict):
            raise ValidationError("not a results file of sonality eval", file=str(self.path))
        theirs = {k: header.get(k) for k in _IDENTITY}
        if theirs != self.info.identity():
            changed = sorted(k for k in _IDENTITY if theirs[k] != self.info.identity()[k])
            raise ConflictError(
                "the results file belongs to another run; pass --fresh or another --output",
                file=str(self.path),
                differs=",".join(changed),
            )
        for line in lines[1:]:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash: that unit runs again
            if isinstance(record, dict) and isinstance(record.get("key"), str):
                self.done[record["key"]] = record

    async def append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        async with self._lock:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
            self.done[str(record["key"])] = dict(record)


class RunOutcome(BaseModel):
    """The records of a run (resumed ones included), in unit order, and what failed."""

    model_config = ConfigDict(frozen=True)

    records: list[dict[str, Any]]
    resumed: int
    failed: list[str]
    wall_seconds: float


async def run_units(
    units: Sequence[U],
    *,
    key: Callable[[U], str],
    work: Callable[[U], Awaitable[dict[str, Any]]],
    label: str,
    concurrency: int,
    results: ResultsFile | None = None,
    progress: Progress | None = None,
) -> RunOutcome:
    """Run ``work`` on every unit not in ``results`` yet, ``concurrency`` at a time."""
    if concurrency < 1:
        raise ValidationError("concurrency must be at least 1", field="concurrency")
    started = time.perf_counter()
    done = results.done if results is not None else {}
    todo = [u for u in units if key(u) not in done]
    resumed = len(units) - len(todo)
    fresh: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    gate = asyncio.Semaphore(concurrency)
    if progress is not None:
        progress.start(label, len(units), done=resumed)

    async def one(unit: U) -> None:
        k = key(unit)
        async with gate:
            try:
                record = {"key": k, **await work(unit)}
            except SonalityError as exc:
                failed.append(k)
                log.warning("eval_unit_failed", eval=label, key=k, error=str(exc))
                if progress is not None:
                    progress.advance(failed=True)
                return
        if results is not None:
            await results.append(record)
        fresh[k] = record
        if progress is not None:
            progress.advance()

    try:
        await asyncio.gather(*(one(u) for u in todo))
    finally:
        if progress is not None:
            progress.finish()
    records = [done.get(key(u)) or fresh.get(key(u)) for u in units]
    return RunOutcome(
        records=[r for r in records if r is not None],
        resumed=resumed,
        failed=failed,
        wall_seconds=time.perf_counter() - started,
    )
