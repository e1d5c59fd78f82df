"""One evaluation run's plumbing for the command line: settings, the persona's model, the
judge's model, the evaluation store, logging that keeps off the progress line, and the
output files.

The persona's model is ``--llm package.module:callable`` or ``--model`` (default
``SONALITY_MODEL``) with ``--api-base`` / ``--api-key`` (default ``SONALITY_LLM_API_BASE``
/ ``SONALITY_LLM_API_KEY``). The judge is ``--judge-llm`` or ``--judge-model`` (default:
the persona's model) with its own endpoint and key; it reuses the persona's endpoint only
when it is the same model. The store is ``--store`` or, by default, a SQLite file in the
output folder, never the configured production store.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import click

from sonality.errors import ConfigError
from sonality.eval.judge import Judge
from sonality.eval.progress import Progress

if TYPE_CHECKING:
    from sonality.config import Settings
    from sonality.eval.estimate import Estimate
    from sonality.eval.runner import RunInfo, RunOutcome
    from sonality.ports import LLM
    from sonality.service import Sonality

__all__ = ["Common", "Session", "execute", "open_session", "write_outputs"]


@dataclass(frozen=True)
class Common:
    """The options every ``sonality eval`` command takes."""

    model: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    llm: str | None = None
    judge_model: str | None = None
    judge_api_base: str | None = None
    judge_api_key: str | None = None
    judge_llm: str | None = None
    store: str | None = None
    output: Path = Path("sonality-eval")
    cases: Path | None = None
    limit: int | None = None
    concurrency: int = 4
    seed: int = 0
    dry_run: bool = False
    as_json: bool = False
    fresh: bool = False
    progress: bool = True
    plot: bool = True


def load_settings() -> Settings:
    from pydantic import ValidationError as PydanticValidationError

    from sonality.config import Settings

    try:
        return Settings()
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]).upper()
        raise ConfigError(f"bad setting SONALITY_{where}: {first['msg']}") from None


def persona_model_name(common: Common, settings: Settings) -> str | None:
    if common.llm:
        return common.llm
    return common.model or settings.model


def judge_model_name(common: Common, settings: Settings) -> str | None:
    if common.judge_llm:
        return common.judge_llm
    return common.judge_model or persona_model_name(common, settings)


def _litellm(model: str, api_base: str | None, api_key: str | None, settings: Settings) -> LLM:
    from sonality.llm.litellm_llm import LiteLLM

    return LiteLLM(
        model,
        api_base=api_base,
        api_key=api_key,
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
    )


def persona_llm(common: Common, settings: Settings) -> LLM:
    from sonality.wiring import load_llm_factory

    if common.llm:
        return load_llm_factory(common.llm, settings)
    model = common.model or settings.model
    if not model:
        raise ConfigError("no model to evaluate: set SONALITY_MODEL or pass --model (or --llm)")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return _litellm(
        model, common.api_base or settings.llm_api_base, common.api_key or key, settings
    )


def judge_llm(common: Common, settings: Settings, persona: LLM) -> LLM:
    from sonality.wiring import load_llm_factory

    if common.judge_llm:
        return load_llm_factory(common.judge_llm, settings)
    if common.judge_model is None and common.llm:
        return persona  # a plugged-in persona model judges too, unless told otherwise
    persona_model = common.model or settings.model
    model = common.judge_model or persona_model
    if not model:
        raise ConfigError("no judge model: pass --judge-model (or --judge-llm)")
    same = model == persona_model
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    api_base = common.judge_api_base or (
        (common.api_base or settings.llm_api_base) if same else None
    )
    api_key = common.judge_api_key or ((common.api_key or key) if same else None)
    return _litellm(model, api_base, api_key, settings)


@dataclass
class Session:
    app: Sonality
    judge: Judge
    progress: Progress
    settings: Settings
    store_url: str


def store_url(common: Common, eval_name: str) -> str:
    if common.store:
        return common.store
    return "sqlite:///" + str((common.output / f"{eval_name}-store.db").resolve())


def backend_of(url: str) -> str:
    return "sqlite" if url.startswith("sqlite:///") else "neo4j"


@asynccontextmanager
async def open_session(common: Common, eval_name: str) -> AsyncIterator[Session]:
    """Build the app on the evaluation store, with logs routed above the progress line."""
    from sonality.observability import configure_logging
    from sonality.service import Sonality

    settings = load_settings()
    progress = Progress(enabled=common.progress)
    configure_logging(
        settings.log_format, settings.log_level, stream=cast(TextIO, progress.log_stream())
    )
    persona = persona_llm(common, settings)
    judge = Judge(judge_llm(common, settings, persona))
    url = store_url(common, eval_name)
    common.output.mkdir(parents=True, exist_ok=True)
    app = await Sonality.open(settings.model_copy(update={"store": url}), migrate=True, llm=persona)
    try:
        yield Session(app=app, judge=judge, progress=progress, settings=settings, store_url=url)
    finally:
        await app.close()  # closes the persona's model client
        # the judge's own client (a second adapter unless it judges with the persona's
        # model object) is closed on this loop too: a session left open when asyncio.run
        # closes the loop keeps its pooled sockets open until the collector finds them
        aclose = getattr(judge.llm, "aclose", None)
        if judge.llm is not persona and aclose is not None:
            await aclose()


def write_outputs(
    common: Common, eval_name: str, summary: Mapping[str, Any], markdown: str
) -> dict[str, str]:
    """Write ``<eval>-summary.json`` and ``<eval>.md``; return their paths."""
    common.output.mkdir(parents=True, exist_ok=True)
    summary_path = common.output / f"{eval_name}-summary.json"
    markdown_path = common.output / f"{eval_name}.md"
    summary_path.write_text(
        json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
    markdown_path.write_text(markdown + "\n", encoding="utf-8")
    return {"summary": str(summary_path), "tables": str(markdown_path)}


# the steps every command shares ---------------------------------------------------------


def dry_run(common: Common, title: str, fill: Callable[[Estimate], None]) -> None:
    from sonality.eval.estimate import Estimate, render
    from sonality.llm.pricing import price

    settings = load_settings()
    est = Estimate(
        model=persona_model_name(common, settings), judge=judge_model_name(common, settings)
    )
    fill(est)
    report = est.report(price)
    if common.as_json:
        click.echo(json.dumps({"dry_run": report}, indent=2))
    else:
        click.echo(render(report, title))


def run_info(common: Common, eval_name: str, dataset: Any, options: Mapping[str, Any]) -> RunInfo:
    from sonality.eval.runner import RunInfo

    settings = load_settings()
    return RunInfo.create(
        eval_name,
        model=persona_model_name(common, settings),
        judge=judge_model_name(common, settings),
        dataset=dataset.source,
        dataset_sha256=dataset.sha256,
        seed=common.seed,
        store=backend_of(store_url(common, eval_name)),
        options=options,
    )


def usage_summary(session: Session, outcome: RunOutcome) -> dict[str, Any]:
    """Persona calls summed over every record (resumed ones too) and this process's judge
    calls."""
    by_component: dict[str, int] = {}
    totals: dict[str, Any] = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    for record in outcome.records:
        usage = record.get("usage") or {}
        for k in totals:
            totals[k] += usage.get(k, 0)
        for comp, n in (usage.get("by_component") or {}).items():
            by_component[comp] = by_component.get(comp, 0) + n
    judge: dict[str, Any] = {}
    snapshot = getattr(getattr(session.judge.llm, "usage", None), "snapshot", None)
    if callable(snapshot):
        judge_usage = snapshot().get("judge")
        if judge_usage is not None:
            judge = judge_usage.model_dump()
    return {"persona": {**totals, "by_component": by_component}, "judge_this_process": judge}


def finish(
    common: Common,
    eval_name: str,
    info: RunInfo,
    outcome: RunOutcome,
    tables: Mapping[str, Any],
    markdown: str,
    usage: Mapping[str, Any],
    plot: Callable[[Path], Path] | None,
) -> None:
    from sonality.eval import plots

    plot_path: str | None = None
    plot_note = None
    if plot is not None and common.plot:
        if plots.available():
            plot_path = str(plot(common.output / f"{eval_name}.png"))
        else:
            plot_note = "plot skipped: install sonality[eval] for matplotlib"
            click.echo(plot_note, err=True)
    stats = (
        f"{len(outcome.records)} units ({outcome.resumed} resumed, {len(outcome.failed)} failed)"
        f" in {outcome.wall_seconds:.1f}s; persona calls {usage['persona']['calls']}"
    )
    summary = {
        "run": info.model_dump(),
        "tables": dict(tables),
        "units": len(outcome.records),
        "resumed": outcome.resumed,
        "failed": outcome.failed,
        "wall_seconds": round(outcome.wall_seconds, 3),
        "usage": dict(usage),
        "plot": plot_path,
    }
    document = f"{info.header()}\n\n{markdown}\n{stats}"
    files = write_outputs(common, eval_name, summary, document)
    files["results"] = str(common.output / f"{eval_name}.jsonl")
    if plot_path:
        files["plot"] = plot_path
    summary["files"] = files
    if common.as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(document)
        click.echo("files: " + ", ".join(f"{k} {v}" for k, v in files.items()))
    if outcome.failed:
        click.echo(
            f"{len(outcome.failed)} units failed; rerun the same command to retry them", err=True
        )


async def execute(
    common: Common,
    name: str,
    *,
    data: Any,
    units: Sequence[Any],
    identity: Mapping[str, Any],
    estimate: Callable[[Estimate], None],
    work: Callable[[Session], Callable[[Any], Awaitable[dict[str, Any]]]],
    compute: Callable[[list[dict[str, Any]]], Any],
    render: Callable[[Any], str],
    plot: Callable[..., Path],
    plot_title: str,
) -> None:
    """Dry run, or: open the results file, run every unit in a session, compute the
    tables and write everything out (the skeleton every evaluation shares)."""
    from sonality.eval.runner import ResultsFile, run_units

    if common.dry_run:
        dry_run(common, f"sonality eval {name}", estimate)
        return
    info = run_info(common, name, data, identity)
    results = ResultsFile(common.output / f"{name}.jsonl", info, fresh=common.fresh)
    async with open_session(common, name) as session:
        outcome = await run_units(
            units,
            key=lambda u: str(u.key),
            work=work(session),
            label=name,
            concurrency=common.concurrency,
            results=results,
            progress=session.progress,
        )
        usage = usage_summary(session, outcome)
    tables = compute(outcome.records)
    finish(
        common,
        name,
        info,
        outcome,
        tables.model_dump(),
        render(tables),
        usage,
        lambda path: plot(tables, path, title=f"{plot_title} · {info.model}"),
    )
