"""``sonality eval``: the click group of the evaluation suite.

Importing this module imports click and nothing heavy: every command imports what it
needs (the facade, litellm through the LLM adapter, matplotlib through ``plots``) when it
runs, so ``sonality --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

if TYPE_CHECKING:
    from sonality.eval.estimate import Estimate
    from sonality.eval.runner import RunInfo, RunOutcome
    from sonality.eval.session import Common, Session

__all__ = ["eval_group"]

P = ParamSpec("P")
R = TypeVar("R")

MODES = ("baseline", "threads", "controller", "full")


class EvalGroup(click.Group):
    """Turns Sonality's errors into one line on stderr and the branch's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from sonality.errors import SonalityError, exit_code_for

        try:
            return super().invoke(ctx)
        except SonalityError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exit_code_for(exc))
        except KeyboardInterrupt:
            click.echo("interrupted (finished units are kept; rerun to continue)", err=True)
            ctx.exit(130)


def _common_options(fn: Callable[P, R]) -> Callable[P, R]:
    options = [
        click.option("--model", help="Persona model (litellm name). Default: SONALITY_MODEL."),
        click.option("--api-base", help="Persona model endpoint. Default: SONALITY_LLM_API_BASE."),
        click.option(
            "--api-key", envvar="SONALITY_EVAL_API_KEY", help="Persona model key (never logged)."
        ),
        click.option("--llm", "llm_spec", metavar="M:F", help="Persona model plug-in."),
        click.option("--judge-model", help="Judge model. Default: the persona model."),
        click.option("--judge-api-base", help="Judge endpoint."),
        click.option(
            "--judge-api-key",
            envvar="SONALITY_EVAL_JUDGE_API_KEY",
            help="Judge key (never logged).",
        ),
        click.option("--judge-llm", "judge_spec", metavar="M:F", help="Judge model plug-in."),
        click.option(
            "--store",
            help="Store URL for the evaluation's personas. Default: a SQLite file in --output.",
        ),
        click.option(
            "--output",
            type=click.Path(file_okay=False, path_type=Path),
            default=Path("sonality-eval"),
            show_default=True,
            help="Folder for the results, summary, tables and plot.",
        ),
        click.option(
            "--cases",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Data file replacing the bundled one.",
        ),
        click.option("--limit", type=click.IntRange(min=1), help="Use only the first N items."),
        click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True),
        click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed."),
        click.option(
            "--dry-run", is_flag=True, help="Estimate calls, tokens and cost; send nothing."
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON."),
        click.option("--fresh", is_flag=True, help="Start the results file over."),
        click.option("--no-progress", is_flag=True, help="No progress line on stderr."),
        click.option("--no-plot", is_flag=True, help="Skip the PNG plot."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _common(kw: dict[str, Any]) -> Common:
    from sonality.eval.session import Common

    return Common(
        model=kw.pop("model"),
        api_base=kw.pop("api_base"),
        api_key=kw.pop("api_key"),
        llm=kw.pop("llm_spec"),
        judge_model=kw.pop("judge_model"),
        judge_api_base=kw.pop("judge_api_base"),
        judge_api_key=kw.pop("judge_api_key"),
        judge_llm=kw.pop("judge_spec"),
        store=kw.pop("store"),
        output=kw.pop("output"),
        cases=kw.pop("cases"),
        limit=kw.pop("limit"),
        concurrency=kw.pop("concurrency"),
        seed=kw.pop("seed"),
        dry_run=kw.pop("dry_run"),
        as_json=kw.pop("as_json"),
        fresh=kw.pop("fresh"),
        progress=not kw.pop("no_progress"),
        plot=not kw.pop("no_plot"),
    )


def _list(value: str, allowed: tuple[str, ...], name: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise click.BadParameter(f"choose from {', '.join(allowed)}", param_hint=name)
    return items


def _run(fn: Callable[P, Awaitable[None]]) -> Callable[P, None]:
    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(fn(*args, **kwargs))  # type: ignore[arg-type]

    return wrapper


def _options(model: type[Any], **values: Any) -> Any:
    """Build an options model; a bad value is a ``ValidationError`` (exit code 2)."""
    from pydantic import ValidationError as PydanticValidationError

    from sonality.errors import ValidationError

    try:
        return model(**values)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        raise ValidationError(f"bad option {first['loc'][0]}: {first['msg']}") from None


# shared steps ------------------------------------------------------------------------------


def _dry_run(common: Common, title: str, fill: Callable[[Estimate], None]) -> None:
    from sonality.eval.estimate import Estimate, render
    from sonality.eval.session import judge_model_name, load_settings, persona_model_name
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


def _info(common: Common, eval_name: str, dataset: Any, options: Mapping[str, Any]) -> RunInfo:
    from sonality.eval.runner import RunInfo
    from sonality.eval.session import (
        backend_of,
        judge_model_name,
        load_settings,
        persona_model_name,
        store_url,
    )

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


def _usage(session: Session, outcome: RunOutcome) -> dict[str, Any]:
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
    meter = getattr(session.judge.llm, "usage", None)
    if meter is not None:
        judge_usage = meter.snapshot().get("judge")
        if judge_usage is not None:
            judge = judge_usage.model_dump()
    return {"persona": {**totals, "by_component": by_component}, "judge_this_process": judge}


def _finish(
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
    from sonality.eval.session import write_outputs

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


# the group ---------------------------------------------------------------------------------


@click.group("eval", cls=EvalGroup)
def eval_group() -> None:
    """Evaluate a model with Sonality: CuRaTe safety (MIRROR's protocol), latency,
    belief stability under pressure, and retention across reflections.

    Every command runs offline against any litellm model (--model, or SONALITY_MODEL)
    with a judge model (--judge-model, default the same), writes resumable results,
    a summary, Markdown tables and a PNG plot (pip install 'sonality[eval]') to
    --output, and estimates calls, tokens and cost with --dry-run.
    """


@eval_group.command("curate")
@_common_options
@click.option("--modes", default=",".join(MODES), show_default=True, help="Ablation modes.")
@click.option("--scenarios", default="1,2,3,4,5", show_default=True)
@click.option(
    "--affect", type=click.Choice(["off", "talker", "thinker"]), default="off", show_default=True
)
@click.option("--biased", is_flag=True, help="Ask the leading variant of the final question.")
@click.option("--distractors", type=click.IntRange(0, 20), default=3, show_default=True)
def curate_command(**kw: Any) -> None:
    """CuRaTe: does the final answer account for the user's safety constraint?"""
    common = _common(kw)
    modes = _list(kw["modes"], MODES, "--modes")
    scenarios = tuple(
        int(s) for s in _list(kw["scenarios"], ("1", "2", "3", "4", "5"), "--scenarios")
    )
    _run(_curate)(common, modes, scenarios, kw["affect"], kw["biased"], kw["distractors"])


async def _curate(
    common: Common,
    modes: tuple[str, ...],
    scenarios: tuple[int, ...],
    affect: str,
    biased: bool,
    distractors: int,
) -> None:
    from sonality.eval import curate as c
    from sonality.eval.datasets import load_curate
    from sonality.eval.runner import ResultsFile, run_units
    from sonality.eval.session import open_session

    options = _options(
        c.CurateOptions,
        modes=modes,
        scenarios=scenarios,
        affect=affect,
        biased=biased,
        distractors=distractors,
        limit=common.limit,
        seed=common.seed,
    )
    data = load_curate(common.cases)
    units = c.build_units(data, options)
    if common.dry_run:
        _dry_run(common, "sonality eval curate", lambda est: c.estimate(units, options, est))
        return
    info = _info(common, "curate", data, options.model_dump(exclude={"limit"}))
    results = ResultsFile(common.output / "curate.jsonl", info, fresh=common.fresh)
    async with open_session(common, "curate") as session:
        outcome = await run_units(
            units,
            key=lambda u: u.key,
            work=lambda u: c.run_dialogue(session.app, session.judge, u, affect=options.affect),
            label="curate",
            concurrency=common.concurrency,
            results=results,
            progress=session.progress,
        )
        usage = _usage(session, outcome)
    tables = c.compute_tables(outcome.records, options)

    def plot(path: Path) -> Path:
        return c.plot(tables, path, title=f"CuRaTe pass rate · {info.model}")

    _finish(common, "curate", info, outcome, tables.model_dump(), c.render(tables), usage, plot)


@eval_group.command("latency")
@_common_options
@click.option("--modes", default="baseline,full", show_default=True, help="Ablation modes.")
@click.option(
    "--affect", type=click.Choice(["off", "talker", "thinker"]), default="off", show_default=True
)
@click.option("--distractors", type=click.IntRange(0, 20), default=3, show_default=True)
@click.option(
    "--time-scale",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Multiply every simulated human delay (1 = real time).",
)
@click.option("--typing-wpm", type=click.FloatRange(min=1), default=40.0, show_default=True)
@click.option("--reading-wpm", type=click.FloatRange(min=1), default=250.0, show_default=True)
def latency_command(**kw: Any) -> None:
    """Latency with simulated typing, reading and thinking (MIRROR's Appendix I)."""
    common = _common(kw)
    modes = _list(kw["modes"], MODES, "--modes")
    _run(_latency)(
        common,
        modes=modes,
        affect=kw["affect"],
        distractors=kw["distractors"],
        time_scale=kw["time_scale"],
        typing_wpm=kw["typing_wpm"],
        reading_wpm=kw["reading_wpm"],
    )


async def _latency(common: Common, **values: Any) -> None:
    from sonality.eval import latency as lt
    from sonality.eval.datasets import load_curate
    from sonality.eval.runner import ResultsFile, run_units
    from sonality.eval.session import open_session

    options = _options(lt.LatencyOptions, limit=common.limit, seed=common.seed, **values)
    data = load_curate(common.cases)
    units = lt.build_units(data, options)
    if common.dry_run:
        _dry_run(common, "sonality eval latency", lambda est: lt.estimate(units, options, est))
        return
    info = _info(common, "latency", data, options.model_dump(exclude={"limit"}))
    results = ResultsFile(common.output / "latency.jsonl", info, fresh=common.fresh)
    async with open_session(common, "latency") as session:
        outcome = await run_units(
            units,
            key=lambda u: u.key,
            work=lambda u: lt.run_conversation(session.app, u, options),
            label="latency",
            concurrency=common.concurrency,
            results=results,
            progress=session.progress,
        )
        usage = _usage(session, outcome)
    tables = lt.compute_tables(outcome.records, options)

    def plot(path: Path) -> Path:
        return lt.plot(tables, path, title=f"Response time by turn type · {info.model}")

    _finish(common, "latency", info, outcome, tables.model_dump(), lt.render(tables), usage, plot)


@eval_group.command("pressure")
@_common_options
@click.option("--modes", default="full", show_default=True, help="Ablation modes.")
@click.option(
    "--affect", type=click.Choice(["off", "talker", "thinker"]), default="off", show_default=True
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=0.02,
    show_default=True,
    help="Belief movement toward pressure still counted as holding.",
)
def pressure_command(**kw: Any) -> None:
    """Belief stability: hold against social pressure, move for counter-evidence."""
    common = _common(kw)
    modes = _list(kw["modes"], MODES, "--modes")
    _run(_pressure)(common, modes=modes, affect=kw["affect"], tolerance=kw["tolerance"])


async def _pressure(common: Common, **values: Any) -> None:
    from sonality.eval import pressure as pr
    from sonality.eval.datasets import load_pressure
    from sonality.eval.runner import ResultsFile, run_units
    from sonality.eval.session import load_settings, open_session

    options = _options(pr.PressureOptions, limit=common.limit, seed=common.seed, **values)
    data = load_pressure(common.cases)
    units = pr.build_units(data, options)
    if common.dry_run:
        cooling = load_settings().cooling_period
        _dry_run(
            common,
            "sonality eval pressure",
            lambda est: pr.estimate(units, options, est, cooling=cooling),
        )
        return
    info = _info(common, "pressure", data, options.model_dump(exclude={"limit"}))
    results = ResultsFile(common.output / "pressure.jsonl", info, fresh=common.fresh)
    async with open_session(common, "pressure") as session:
        outcome = await run_units(
            units,
            key=lambda u: u.key,
            work=lambda u: pr.run_topic(session.app, session.judge, u, options),
            label="pressure",
            concurrency=common.concurrency,
            results=results,
            progress=session.progress,
        )
        usage = _usage(session, outcome)
    tables = pr.compute_tables(outcome.records, options)

    def plot(path: Path) -> Path:
        return pr.plot(tables, path, title=f"Belief movement · {info.model}")

    _finish(common, "pressure", info, outcome, tables.model_dump(), pr.render(tables), usage, plot)


@eval_group.command("retention")
@_common_options
@click.option(
    "--arms",
    default="triggered,every",
    show_default=True,
    help="triggered: reflect when due; every: force a reflection after each interaction.",
)
@click.option(
    "--interactions",
    type=click.IntRange(1, 10_000),
    default=100,
    show_default=True,
    help="Interactions per arm (--limit, when given, wins).",
)
@click.option(
    "--match",
    type=click.Choice(["judge", "string"]),
    default="judge",
    show_default=True,
    help="How a planted trait is found in the snapshot.",
)
def retention_command(**kw: Any) -> None:
    """Retention across reflections: traits, facts and beliefs after N rewrites."""
    common = _common(kw)
    arms = _list(kw["arms"], ("triggered", "every"), "--arms")
    interactions = common.limit or kw["interactions"]
    _run(_retention)(common, arms=arms, interactions=interactions, match=kw["match"])


async def _retention(common: Common, **values: Any) -> None:
    from sonality.eval import retention as rt
    from sonality.eval.datasets import load_retention
    from sonality.eval.runner import ResultsFile, run_units
    from sonality.eval.session import load_settings, open_session

    options = _options(rt.RetentionOptions, seed=common.seed, **values)
    data = load_retention(common.cases)
    units = rt.build_units(data, options)
    if common.dry_run:
        every = load_settings().reflection_every
        _dry_run(
            common,
            "sonality eval retention",
            lambda est: rt.estimate(units, options, est, reflection_every=every),
        )
        return
    info = _info(common, "retention", data, options.model_dump())
    results = ResultsFile(common.output / "retention.jsonl", info, fresh=common.fresh)
    async with open_session(common, "retention") as session:
        outcome = await run_units(
            units,
            key=lambda u: u.key,
            work=lambda u: rt.run_arm(session.app, session.judge, u, options),
            label="retention",
            concurrency=common.concurrency,
            results=results,
            progress=session.progress,
        )
        usage = _usage(session, outcome)
    tables = rt.compute_tables(outcome.records, options)

    def plot(path: Path) -> Path:
        return rt.plot(tables, path, title=f"Planted traits kept · {info.model}")

    _finish(common, "retention", info, outcome, tables.model_dump(), rt.render(tables), usage, plot)
