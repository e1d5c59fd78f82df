"""The reflection commands: ``reflect``, ``reflections``, ``snapshot history|show|rollback``
and ``worker``.

``--llm package.module:callable`` (on ``reflect`` and ``worker``) replaces the model named
by ``SONALITY_MODEL`` with the object the callable returns when called with the settings:
a plug-in point for your own LLM adapter (or ``sonality.testing.ScriptedLLM`` in tests).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sonality.cli.shell import (
    CliState,
    Unsuccessful,
    emit,
    json_option,
    lines,
    llm_option,
    persona_option,
    run,
)

if TYPE_CHECKING:
    from sonality.models import Reflection, ReflectionReport, Snapshot

__all__ = ["reflect", "reflections", "snapshot", "worker"]


# reflect ---------------------------------------------------------------------------------


def _diff_text(report: ReflectionReport) -> str:
    parts = []
    for op, words in report.diff():
        if op == "=":
            parts.append(words)
        elif op == "-":
            parts.append(click.style(f"[-{words}-]", fg="red"))
        else:
            parts.append(click.style(f"{{+{words}+}}", fg="green"))
    return " ".join(parts)


def _report_text(report: ReflectionReport) -> None:
    dry = " (dry run)" if report.dry_run else ""
    why = f": {report.reason}" if report.reason else ""
    click.echo(f"{report.persona_id}: {report.outcome}{dry}, trigger {report.trigger}{why}")
    if report.detail:
        click.echo(f"  detail: {report.detail}")
    if report.outcome == "skipped" or report.new_snapshot is None:
        return
    ratio = f", retention {report.retention_ratio:.2f}" if report.retention_ratio else ""
    if report.rewrote:
        change = f"v{report.previous_version} -> v{report.snapshot_version}"
    elif report.outcome == "committed":
        change = f"v{report.snapshot_version} unchanged"
    else:
        change = f"v{report.previous_version} kept; proposed text"
    click.echo(f"  snapshot {change}{ratio}")
    click.echo("  " + _diff_text(report))
    click.echo(
        f"  beliefs decayed: {', '.join(report.beliefs_decayed) or 'none'}; "
        f"retired: {', '.join(report.beliefs_retired) or 'none'}"
    )
    if report.decay_review in ("applied", "fallback"):
        advice = ", ".join(f"{topic} {verdict}" for topic, verdict in report.advice)
        review = "model unusable, all retained" if report.decay_review == "fallback" else ""
        click.echo(f"  decay review: {advice or review or 'all retained'}")
    click.echo(
        f"  insights consumed {report.insights_consumed}, episodes read {report.episodes_read}, "
        f"llm calls {report.llm_calls}, {report.duration_ms:.0f} ms"
    )
    for warning in report.health:
        click.echo(click.style(f"  health: {warning.code.value}: {warning.message}", fg="yellow"))


def _report_json(report: ReflectionReport) -> dict[str, Any]:
    data = report.model_dump(mode="json")
    data["rewrote"] = report.rewrote
    data["diff"] = [list(run) for run in report.diff()]
    return data


@click.command()
@click.option("--persona", "persona_id", help="Persona id.")
@click.option("--all", "all_personas", is_flag=True, help="Every persona, in turn.")
@click.option("--force", is_flag=True, help="Reflect even when no trigger holds.")
@click.option("--dry-run", is_flag=True, help="Ask the model and validate; write nothing.")
@json_option
@llm_option
@click.pass_obj
@run
async def reflect(
    state: CliState,
    persona_id: str | None,
    all_personas: bool,
    force: bool,
    dry_run: bool,
    as_json: bool,
    llm_spec: str | None,
) -> None:
    """Run the reflection pipeline now (the same one the worker runs).

    Without --force it reflects only when a trigger holds (cooldown, periodic, event).
    Exits 1 when a reflection was rejected or failed, 3 when no model is configured, 9
    when another worker holds a persona's reflection lease (nothing ran; try again
    later).
    """
    if (persona_id is None) == (not all_personas):
        raise click.UsageError("give exactly one of --persona or --all")

    reports: list[ReflectionReport] = []
    async with state.app(llm_spec=llm_spec) as app:
        if persona_id is not None:
            reports.append(await app.reflect(persona_id, force=force, dry_run=dry_run))
        else:
            personas = [p.id for p in await app.personas()]
            with click.progressbar(
                personas, label="reflecting", file=sys.stderr, show_pos=True
            ) as bar:
                for pid in bar:
                    reports.append(await app.reflect(pid, force=force, dry_run=dry_run))

    def text() -> None:
        for report in reports:
            _report_text(report)
        if not reports:
            click.echo("no personas")

    payload = [_report_json(r) for r in reports]
    emit(payload if all_personas else payload[0], as_json, text)
    from sonality.errors import ConfigError, LeaseHeld
    from sonality.models import LEASE_HELD, NO_MODEL

    if any(r.outcome == "failed" and r.reason == NO_MODEL for r in reports):
        raise ConfigError("no model is configured: set SONALITY_MODEL or pass --llm")

    busy = [r.persona_id for r in reports if r.outcome == "skipped" and r.reason == LEASE_HELD]
    if busy:
        raise LeaseHeld("another worker holds the reflection lease; try again later", personas=busy)
    if any(r.outcome in ("rejected", "failed") for r in reports):
        raise Unsuccessful


def _reflection_text(r: Reflection) -> str:
    version = f"v{r.snapshot_version}" if r.snapshot_version else f"v{r.previous_version} kept"
    why = f" ({r.reason})" if r.reason else ""
    health = f" health={','.join(r.health)}" if r.health else ""
    return (
        f"{r.started_at:%Y-%m-%d %H:%M:%S} {r.trigger:<8} {r.outcome.value}{why} {version} "
        f"at interaction {r.interaction_count}, {r.duration_ms:.0f} ms{health}"
    )


@click.command()
@persona_option
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@json_option
@click.pass_obj
@run
async def reflections(state: CliState, persona_id: str, limit: int, as_json: bool) -> None:
    """List a persona's reflection attempts, newest first."""
    async with state.reads() as app:
        items = await app.reflections(persona_id, limit=limit)
    emit(items, as_json, lambda: lines(items, _reflection_text, "no reflections yet"))


# snapshots -------------------------------------------------------------------------------


@click.group()
def snapshot() -> None:
    """Inspect and roll back a persona's snapshot versions."""


def _snapshot_line(s: Snapshot) -> str:
    flat = " ".join(s.text.split())
    when = f"{s.created_at:%Y-%m-%d %H:%M}"
    return f"v{s.version:<4} {when} {s.reason:<12} {len(s.text):>5} chars  {flat[:60]}"


@snapshot.command("history")
@persona_option
@json_option
@click.pass_obj
@run
async def snapshot_history(state: CliState, persona_id: str, as_json: bool) -> None:
    """Every kept version, newest first."""
    async with state.reads() as app:
        items = list(await app.snapshots(persona_id))

    def text() -> None:
        for item in items:
            click.echo(_snapshot_line(item))

    emit(items, as_json, text)


@snapshot.command("show")
@persona_option
@click.option("--version", "version", type=int, help="A version (default: the current one).")
@json_option
@click.pass_obj
@run
async def snapshot_show(
    state: CliState, persona_id: str, version: int | None, as_json: bool
) -> None:
    """Print one version's text."""
    from sonality.errors import NotFoundError

    async with state.reads() as app:
        if version is None:
            item = await app.snapshot(persona_id)
        else:
            found = [s for s in await app.snapshots(persona_id) if s.version == version]
            if not found:
                raise NotFoundError(
                    "no such snapshot version", persona_id=persona_id, version=version
                )
            item = found[0]

    def text() -> None:
        click.echo(f"v{item.version} ({item.reason}, {item.created_at:%Y-%m-%d %H:%M})")
        click.echo(item.text)

    emit(item, as_json, text)


@snapshot.command("rollback")
@persona_option
@click.option("--to", "to_version", type=int, required=True, help="The version to restore.")
@json_option
@click.pass_obj
@run
async def snapshot_rollback(
    state: CliState, persona_id: str, to_version: int, as_json: bool
) -> None:
    """Make an old version's text current again, as a new version (``rollback:N``)."""
    async with state.app() as app:
        item = await app.rollback_snapshot(persona_id, to_version)
    emit(
        item,
        as_json,
        lambda: click.echo(f"v{item.version} now carries the text of v{to_version}"),
    )


# worker ----------------------------------------------------------------------------------


@click.command()
@click.option(
    "--scan-seconds",
    type=click.FloatRange(0, 86_400, min_open=True),
    help="Scan interval [SONALITY_WORKER_SCAN_SECONDS].",
)
@click.option(
    "--retry-seconds",
    type=click.FloatRange(0, 86_400, min_open=True),
    help="Enrichment retry base interval.",
)
@click.option(
    "--idle-seconds",
    type=click.FloatRange(0, 31_536_000, min_open=True),
    help="Reflect quiet personas with pending insights.",
)
@click.option(
    "--grace-seconds",
    type=click.FloatRange(0, 86_400),
    default=None,
    help="How long a stop lets running jobs finish [default: SONALITY_SHUTDOWN_SECONDS, 10].",
)
@click.option("--once", is_flag=True, help="One pass (enrich pending, reflect due), then exit.")
@click.option("--owner", help="Lease owner id (default host:pid:random).")
@click.option(
    "--heartbeat-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Touch this file after every scan that reached the store (for health checks).",
)
@json_option
@llm_option
@click.pass_obj
@run
async def worker(
    state: CliState,
    scan_seconds: float | None,
    retry_seconds: float | None,
    idle_seconds: float | None,
    grace_seconds: float | None,
    once: bool,
    owner: str | None,
    heartbeat_file: Path | None,
    as_json: bool,
    llm_spec: str | None,
) -> None:
    """Run the background worker: reflections when due, enrichment retries with backoff.

    Stops gracefully on SIGTERM/SIGINT: running reflections get --grace-seconds to finish,
    then are abandoned without partial writes; their leases are released.
    """
    from sonality.scheduler import Worker, WorkerParams

    settings = state.settings
    params = WorkerParams(
        scan_seconds=scan_seconds or settings.worker_scan_seconds,
        retry_seconds=retry_seconds or settings.worker_retry_seconds,
        idle_seconds=idle_seconds or settings.worker_idle_reflection_seconds,
        grace_seconds=settings.shutdown_seconds if grace_seconds is None else grace_seconds,
        retry_rounds=settings.enrichment_retry_rounds,
        heartbeat_file=heartbeat_file,
    )

    async with state.app(llm_spec=llm_spec, owner=owner) as app:
        runner = Worker(app, params)
        if not once:
            await runner.run_forever()
            return
        outcomes = await runner.run_once()
    emit(
        outcomes,
        as_json,
        lambda: click.echo(
            "\n".join(f"{o['persona_id']}: {o['outcome']}" for o in outcomes) or "nothing due"
        ),
    )
