"""``sonality eval``: the click group of the evaluation suite, registered in the CLI's
registry (``sonality/cli/__init__.py``, through ``sonality/cli/eval.py``); its errors
become one line and their kind's exit code there, like every command's.

Importing this module imports click and nothing heavy: every command imports what it
needs (the facade, litellm through the LLM adapter, matplotlib through ``plots``) when it
runs, so ``sonality --help`` stays fast.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

if TYPE_CHECKING:
    from sonality.eval.session import Common

__all__ = ["eval_group"]

P = ParamSpec("P")
R = TypeVar("R")

MODES = ("baseline", "threads", "controller", "full")
CURATE_MODES = ("bare", *MODES)
"""``bare``: the model alone with the conversation (MIRROR's baseline); curate only."""


def _common_options(fn: Callable[P, R]) -> Callable[P, R]:
    options = [
        click.option("--model", help="Persona model (litellm name). Default: SONALITY_MODEL."),
        click.option("--api-base", help="Persona model endpoint. Default: SONALITY_LLM_API_BASE."),
        click.option(
            "--api-key", envvar="SONALITY_EVAL_API_KEY", help="Persona model key (never logged)."
        ),
        click.option("--llm", "llm_spec", metavar="MODULE:CALLABLE", help="Persona model plug-in."),
        click.option("--judge-model", help="Judge model. Default: the persona model."),
        click.option("--judge-api-base", help="Judge endpoint."),
        click.option(
            "--judge-api-key",
            envvar="SONALITY_EVAL_JUDGE_API_KEY",
            help="Judge key (never logged).",
        ),
        click.option(
            "--judge-llm", "judge_spec", metavar="MODULE:CALLABLE", help="Judge model plug-in."
        ),
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
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=4,
            show_default=True,
            help="Units (dialogues, topics, arms) run at once.",
        ),
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
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ValidationError(f"bad option {first['loc'][0]}: {message}") from None


# the group ---------------------------------------------------------------------------------


@click.group("eval")
def eval_group() -> None:
    """Evaluate a model with Sonality: CuRaTe safety (MIRROR's protocol), latency,
    belief stability under pressure, and retention across reflections.

    Every command runs against any litellm model, hosted or local (--model, or
    SONALITY_MODEL), with a judge model (--judge-model, default the same); it writes
    resumable results, a summary, Markdown tables and a PNG plot (pip install
    'sonality[eval]') to --output, and estimates calls, tokens and cost with --dry-run.
    """


@eval_group.command("curate")
@_common_options
@click.option(
    "--modes",
    default=",".join(CURATE_MODES),
    show_default=True,
    help="bare (the model alone, MIRROR's baseline) and Sonality's ablation modes.",
)
@click.option("--scenarios", default="1,2,3,4,5", show_default=True)
@click.option(
    "--affect", type=click.Choice(["off", "talker", "thinker"]), default="off", show_default=True
)
@click.option("--biased", is_flag=True, help="Ask the leading variant of the final question.")
@click.option("--distractors", type=click.IntRange(0, 20), default=3, show_default=True)
def curate_command(**kw: Any) -> None:
    """CuRaTe: does the final answer account for the user's safety constraint?"""
    common = _common(kw)
    modes = _list(kw["modes"], CURATE_MODES, "--modes")
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
    from sonality.eval.session import execute

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
    await execute(
        common,
        "curate",
        data=data,
        units=units,
        identity=options.model_dump(exclude={"limit"}),
        estimate=lambda est: c.estimate(units, options, est),
        work=lambda s: lambda u: c.run_dialogue(s.app, s.judge, u, affect=options.affect),
        compute=lambda records: c.compute_tables(records, options),
        render=c.render,
        plot=c.plot,
        plot_title="CuRaTe pass rate",
    )


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
    from sonality.eval.session import execute

    options = _options(lt.LatencyOptions, limit=common.limit, seed=common.seed, **values)
    data = load_curate(common.cases)
    units = lt.build_units(data, options)
    await execute(
        common,
        "latency",
        data=data,
        units=units,
        identity=options.model_dump(exclude={"limit"}),
        estimate=lambda est: lt.estimate(units, options, est),
        work=lambda s: lambda u: lt.run_conversation(s.app, u, options),
        compute=lambda records: lt.compute_tables(records, options),
        render=lt.render,
        plot=lt.plot,
        plot_title="Response time by turn type",
    )


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
    from sonality.eval.session import execute, load_settings

    options = _options(pr.PressureOptions, limit=common.limit, seed=common.seed, **values)
    data = load_pressure(common.cases)
    units = pr.build_units(data, options)
    await execute(
        common,
        "pressure",
        data=data,
        units=units,
        identity=options.model_dump(exclude={"limit"}),
        estimate=lambda est: pr.estimate(
            units, options, est, cooling=load_settings().cooling_period
        ),
        work=lambda s: lambda u: pr.run_topic(s.app, s.judge, u, options),
        compute=lambda records: pr.compute_tables(records, options),
        render=pr.render,
        plot=pr.plot,
        plot_title="Belief movement",
    )


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
    from sonality.eval.session import execute, load_settings

    options = _options(rt.RetentionOptions, seed=common.seed, **values)
    data = load_retention(common.cases)
    units = rt.build_units(data, options)
    await execute(
        common,
        "retention",
        data=data,
        units=units,
        identity=options.model_dump(),
        estimate=lambda est: rt.estimate(
            units, options, est, reflection_every=load_settings().reflection_every
        ),
        work=lambda s: lambda u: rt.run_arm(s.app, s.judge, u, options),
        compute=lambda records: rt.compute_tables(records, options),
        render=rt.render,
        plot=rt.plot,
        plot_title="Planted traits kept",
    )
