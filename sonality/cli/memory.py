"""The memory-backend commands: ``persona create|list|show``, ``record``, ``ingest``,
``context``, the reads (``beliefs``, ``facts``, ``episodes``), ``enrich`` and ``pending``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sonality.cli.shell import (
    CliState,
    emit,
    json_option,
    lines,
    llm_option,
    persona_option,
    run,
)

if TYPE_CHECKING:
    from sonality.errors import SonalityError
    from sonality.models import Backlog, Belief, Episode, Persona, UserFact

__all__ = [
    "beliefs",
    "context",
    "enrich",
    "episodes",
    "facts",
    "ingest",
    "pending",
    "persona",
    "record",
]


def _persona_text(p: Persona) -> str:
    return (
        f"{p.id}  {p.name}  interactions={p.interaction_count} "
        f"last_reflection_at={p.last_reflection_at} "
        f"disagreement_rate={p.disagreement_rate:.2f}"
    )


def _belief_text(b: Belief) -> str:
    retired = "  (retired)" if b.status.value == "retired" else ""
    return (
        f"{b.topic:<28} {b.position:+.3f}  confidence {b.confidence:.3f}  "
        f"evidence {b.evidence_count}{retired}"
    )


def _fact_text(f: UserFact) -> str:
    return f"[{f.kind.value}, severity {f.severity}] {f.text}"


def _episode_text(e: Episode) -> str:
    flat = " ".join(e.user_message.split())
    return (
        f"{e.created_at:%Y-%m-%d %H:%M} {e.conversation_id}#{e.turn} "
        f"[{e.enrichment_status.value}] {flat[:70]}"
    )


@click.group()
def persona() -> None:
    """Create and inspect personas."""


@persona.command("create")
@click.argument("persona_id")
@click.option("--name", required=True)
@click.option("--identity", help="Core identity text.")
@click.option("--identity-file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--trait", "traits", multiple=True, help="A personality trait (repeatable).")
@click.option("--value", "values", multiple=True, help="A value it holds (repeatable).")
@click.option("--goal", "goals", multiple=True, help="A long-term goal of its own (repeatable).")
@click.option(
    "--past", "past", multiple=True, help="A piece of its own past, backstory (repeatable)."
)
@json_option
@click.pass_obj
@run
async def persona_create(
    state: CliState,
    persona_id: str,
    name: str,
    identity: str | None,
    identity_file: Path | None,
    traits: tuple[str, ...],
    values: tuple[str, ...],
    goals: tuple[str, ...],
    past: tuple[str, ...],
    as_json: bool,
) -> None:
    """Create persona PERSONA_ID with a core identity and, optionally, a self-model of
    traits, values and goals (both immutable) and pieces of its past (see `persona
    biography`)."""
    if (identity is None) == (identity_file is None):
        raise click.UsageError("give exactly one of --identity or --identity-file")
    text = identity
    if identity_file is not None:
        import asyncio

        from sonality.errors import ValidationError

        raw = await asyncio.to_thread(identity_file.read_bytes)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                f"--identity-file is not UTF-8 text (invalid byte at offset {exc.start})",
                field="identity_file",
            ) from None
    assert text is not None
    from sonality.models import SelfModel

    async with state.app() as app:
        created = await app.create_persona(
            persona_id,
            name=name,
            core_identity=text,
            self_model=SelfModel(traits=traits, values=values, goals=goals),
            biography=list(past),
        )
    emit(created, as_json, lambda: click.echo(f"created {_persona_text(created)}"))


@persona.command("list")
@json_option
@click.pass_obj
@run
async def persona_list(state: CliState, as_json: bool) -> None:
    """List personas."""
    async with state.reads() as app:
        personas = await app.personas()
    emit(personas, as_json, lambda: lines(personas, _persona_text, "no personas yet"))


@persona.command("show")
@click.argument("persona_id")
@json_option
@click.pass_obj
@run
async def persona_show(state: CliState, persona_id: str, as_json: bool) -> None:
    """Show one persona with its current snapshot."""
    async with state.reads() as app:
        found = await app.persona(persona_id)
        current = await app.snapshot(persona_id)

    def text() -> None:
        click.echo(_persona_text(found))
        click.echo(f"core identity: {found.core_identity}")
        model = found.self_model
        for label, items in (
            ("traits", model.traits),
            ("values", model.values),
            ("goals", model.goals),
        ):
            if items:
                click.echo(f"{label}: {'; '.join(items)}")
        click.echo(f"snapshot v{current.version}: {current.text}")

    emit({"persona": found, "snapshot": current}, as_json, text)


@click.command()
@persona_option
@click.option("--user", "user_id", required=True)
@click.option("--conversation", "conversation_id", default="default", show_default=True)
@click.option("--message", required=True)
@click.option("--response", required=True)
@click.option("--id", "episode_id", help="Idempotency key: a repeated id is not stored twice.")
@llm_option
@json_option
@click.pass_obj
@run
async def record(
    state: CliState,
    persona_id: str,
    user_id: str,
    conversation_id: str,
    message: str,
    response: str,
    episode_id: str | None,
    llm_spec: str | None,
    as_json: bool,
) -> None:
    """Record one exchange (and enrich it when a model is configured).

    A one-shot command: the exchange is stored first, then one pass enriches the persona's
    pending episodes in order, this one last, so each model step is called once (an outage
    leaves them pending) and a refused model configuration exits 3. The pass stops at
    SONALITY_RECORD_DEADLINE_SECONDS, as an inline record does: what it has not finished
    stays pending for `sonality enrich` or the worker."""
    import asyncio

    from sonality.errors import LLMConfigError

    async with state.app(llm_spec=llm_spec) as app:
        exchange: dict[str, Any] = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "message": message,
            "response": response,
            "episode_id": episode_id,
        }
        if app.llm is None:  # nothing to call: the inline path reports "no model"
            recorded = await app.record(persona_id, **exchange)
        else:
            recorded = await app.record(persona_id, **exchange, enrich="off")
            deadline = app.limits.record_deadline_seconds
            try:
                report = await asyncio.wait_for(app.enrich_pending(persona_id), deadline)
            except TimeoutError:
                report = None  # cut short: the commits made stand, the rest stays pending
            except LLMConfigError as exc:
                raise type(exc)(
                    exc.message,
                    **{**exc.context, "episode_id": recorded.episode.id, "stored": "pending"},
                ) from exc
            stored = await app.store.get_episode(persona_id, recorded.episode.id)
            recorded = recorded.model_copy(update={"episode": stored, "enrichment": report})
        ep = recorded.episode
    emit(
        recorded,
        as_json,
        lambda: click.echo(
            f"{'stored' if recorded.created else 'already stored'} {ep.id} "
            f"({ep.conversation_id}#{ep.turn}), enrichment {ep.enrichment_status.value}"
        ),
    )


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@persona_option
@click.option("--user", "default_user", default="user", show_default=True)
@click.option("--conversation", "default_conversation", default="default", show_default=True)
@click.option("--no-enrich", is_flag=True, help="Only store; run `sonality enrich` later.")
@json_option
@click.pass_obj
@run
async def ingest(
    state: CliState,
    file: Path,
    persona_id: str,
    default_user: str,
    default_conversation: str,
    no_enrich: bool,
    as_json: bool,
) -> None:
    """Record a JSONL file of exchanges, one per line, then enrich them.

    Good lines are stored in batches of 2,000 (one transaction each, enrichment after).

    Each line: {"message": ..., "response": ..., "user_id"?: ..., "conversation_id"?: ...,
    "id"?: ..., "timestamp"?: ...}. A line without an id gets one derived from the
    exchange itself (persona, user, conversation, message, response, and its timestamp or
    occurrence number), never from the file's name or the line's number: re-running,
    copying or extending the file stores nothing twice. Bad lines (not UTF-8, not JSON,
    wrong field types, an id already taken by another exchange) are reported with their
    number; good ones are kept. A progress bar per phase (storing, enriching) is drawn on
    stderr when it is a terminal; `sonality -q ingest` hides them.
    """
    import asyncio

    from sonality.errors import ConflictError, ValidationError
    from sonality.models import BadLine, Exchange
    from sonality.wiring import quiet, read_exchanges

    data = await asyncio.to_thread(file.read_bytes)
    show = state.verbosity >= 0
    async with state.app() as app:
        await app.persona(persona_id)
        items = list(
            read_exchanges(
                data,
                persona_id=persona_id,
                default_user=default_user,
                default_conversation=default_conversation,
            )
        )
        stored = skipped = 0
        bad: list[dict[str, Any]] = []
        batch: list[tuple[int, Exchange]] = []

        async def flush(bar: Any) -> None:
            nonlocal stored, skipped
            try:
                created = await app.record_batch(persona_id, [ex for _, ex in batch])
            except ConflictError:
                # An id stored before (or earlier in the file) for another exchange: the
                # batch rolled back whole, so store it line by line and report only the
                # lines whose id is taken.
                created = []
                for line, exchange in batch:
                    try:
                        created += await app.record_batch(persona_id, [exchange])
                    except ConflictError as exc:
                        bad.append({"line": line, "error": str(exc)})
            stored += sum(created)
            skipped += len(created) - sum(created)
            bar.update(len(batch))
            batch.clear()

        with (
            quiet(state.verbosity <= 0),
            _bar(None, "storing  ", show, length=len(items)) as bar,
        ):
            for item in items:
                if isinstance(item, BadLine):
                    bad.append({"line": item.line, "error": item.error})
                    bar.update(1)
                    continue
                exchange = Exchange(
                    item.user_id, item.conversation_id, item.message, item.response, item.id
                )
                try:
                    app.check_exchange(exchange)
                except ValidationError as exc:
                    bad.append({"line": item.line, "error": str(exc)})
                    bar.update(1)
                    continue
                batch.append((item.line, exchange))
                if len(batch) >= _INGEST_BATCH:
                    await flush(bar)
            if batch:
                await flush(bar)
        bad.sort(key=lambda item: int(item["line"]))
        report = None if no_enrich else await _enrich_with_bar(app, persona_id, state, show)
    result: dict[str, Any] = {
        "stored": stored,
        "already_stored": skipped,
        "bad_lines": bad,
        "enrichment": report,
    }

    def text() -> None:
        for item in result["bad_lines"]:
            click.echo(f"line {item['line']}: {item['error']}", err=True)
        click.echo(
            f"stored {result['stored']}, already stored {result['already_stored']}, "
            f"bad lines {len(result['bad_lines'])}"
        )
        if result["enrichment"] is not None:
            _echo_enrichment(result["enrichment"])

    emit(result, as_json, text)
    if bad:
        raise ValidationError(
            f"{len(bad)} bad line(s) not recorded",
            lines=[item["line"] for item in bad],
        )


_INGEST_BATCH = 2_000
"""Exchanges ``ingest`` stores per transaction (``record_batch``)."""

_ENRICH_STEP = 50
"""Episodes ``ingest`` enriches per call under its bar (one backlog chunk)."""


def _bar(items: Any, label: str, show: bool, length: int | None = None) -> Any:
    """A progress bar on stderr when it is a terminal, or the bare items: off a terminal
    (a pipe, a log file, CI) nothing at all is written, not even the label click would
    print there once."""
    if not show or not sys.stderr.isatty():
        from contextlib import nullcontext

        return nullcontext(items if items is not None else _Counter())
    return click.progressbar(items, length=length, label=label, file=sys.stderr)


class _Counter:
    """Stands in for a bar when none is drawn."""

    def update(self, n: int) -> None:
        del n


async def _enrich_with_bar(app: Any, persona_id: str, state: CliState, show: bool) -> Any:
    """Enrich the pending episodes a chunk at a time under a bar; the summed report."""
    from sonality.models import EnrichReport
    from sonality.wiring import quiet

    with quiet(state.verbosity <= 0):
        report = await app.enrich_pending(persona_id, limit=_ENRICH_STEP)
        if report.stopped_by is not None or report.remaining == 0:
            return report
        enriched, failed = report.enriched, report.failed
        with _bar(None, "enriching", show, length=enriched + failed + report.remaining) as bar:
            bar.update(enriched + failed)
            while report.stopped_by is None and report.remaining > 0:
                report = await app.enrich_pending(persona_id, limit=_ENRICH_STEP)
                if report.enriched + report.failed == 0:
                    break
                enriched, failed = enriched + report.enriched, failed + report.failed
                bar.update(report.enriched + report.failed)
    return EnrichReport(
        persona_id=persona_id,
        enriched=enriched,
        failed=failed,
        remaining=report.remaining,
        stopped_by=report.stopped_by,
    )


def _echo_enrichment(report: Any) -> None:
    """One line for an enrichment pass (``sonality.service``'s report)."""
    line = f"enriched {report.enriched}, failed {report.failed}, pending {report.remaining}"
    if report.requeued:
        line = f"retried {report.requeued} failed, " + line
    if report.embedded:
        line += f", embedded {report.embedded}"
    if report.insights_extracted or report.insights_failed or report.insights_remaining:
        line += (
            f"; insights extracted {report.insights_extracted}, failed "
            f"{report.insights_failed}, pending {report.insights_remaining}"
        )
    if report.stopped_by == "no_model":
        line += " (no model configured: set SONALITY_MODEL to enrich)"
    elif report.stopped_by:
        line += f" (stopped: {report.stopped_by})"
    click.echo(line)


@click.command()
@persona_option
@click.option("--user", "user_id", required=True)
@click.option("--message", required=True)
@json_option
@click.pass_obj
@run
async def context(
    state: CliState, persona_id: str, user_id: str, message: str, as_json: bool
) -> None:
    """Print the context block an application would inject before answering MESSAGE."""
    async with state.app(with_model=False) as app:
        ctx = await app.context(persona_id, user_id=user_id, message=message)
    emit(ctx, as_json, lambda: click.echo(ctx.as_prompt()))


@click.command()
@persona_option
@click.option("--all", "include_retired", is_flag=True, help="Include retired beliefs.")
@json_option
@click.pass_obj
@run
async def beliefs(state: CliState, persona_id: str, include_retired: bool, as_json: bool) -> None:
    """List a persona's beliefs."""
    async with state.reads() as app:
        found = await app.beliefs(persona_id, include_retired=include_retired)
    emit(found, as_json, lambda: lines(found, _belief_text, "no beliefs yet"))


@click.command()
@persona_option
@click.option("--user", "user_id", required=True)
@json_option
@click.pass_obj
@run
async def facts(state: CliState, persona_id: str, user_id: str, as_json: bool) -> None:
    """List what a user disclosed that must not be forgotten."""
    async with state.reads() as app:
        found = await app.facts(persona_id, user_id=user_id)
    emit(found, as_json, lambda: lines(found, _fact_text, "no facts yet"))


@click.command()
@persona_option
@click.option("--user", "user_id")
@click.option("--conversation", "conversation_id")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@click.option(
    "--before",
    type=click.IntRange(0),
    help="Only episodes older than this seq (the last one of the previous page).",
)
@json_option
@click.pass_obj
@run
async def episodes(
    state: CliState,
    persona_id: str,
    user_id: str | None,
    conversation_id: str | None,
    limit: int,
    before: int | None,
    as_json: bool,
) -> None:
    """List recent episodes, newest first, a page at a time (--before)."""
    async with state.reads() as app:
        found = await app.episodes(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            limit=limit,
            before=before,
        )
    emit(found, as_json, lambda: lines(found, _episode_text, "no episodes"))


@click.command()
@click.option("--persona", "persona_id", help="Only this persona (default: all).")
@click.option(
    "--retry-failed",
    is_flag=True,
    help="First put episodes and insights marked failed back to pending.",
)
@json_option
@llm_option
@click.pass_obj
@run
async def enrich(
    state: CliState,
    persona_id: str | None,
    retry_failed: bool,
    as_json: bool,
    llm_spec: str | None,
) -> None:
    """Enrich pending episodes, oldest first, per persona (first embedding the episodes a
    remote embedder failed on); then extract pending insights.

    Exits 3 when the model refuses the configuration (nothing is marked: fix the settings
    and run it again), 8 when it stopped on an unreachable or invalid model (the rest
    stays pending). --retry-failed brings back what earlier attempts gave up.
    """
    async with state.app(llm_spec=llm_spec) as app:
        ids = [persona_id] if persona_id else [p.id for p in await app.personas()]
        reports = [await app.enrich_pending(pid, retry_failed=retry_failed) for pid in ids]
        # what earlier passes gave up is never left silent: say how to bring it back
        given_up = {
            pid: (await app.store.count_episodes(pid))["failed"]
            + (await app.store.count_insight_retries(pid))["failed"]
            for pid in ids
        }

    def text() -> None:
        for report in reports:
            click.echo(f"{report.persona_id}: ", nl=False)
            _echo_enrichment(report)
            if given_up[report.persona_id]:
                click.echo(
                    f"  {given_up[report.persona_id]} failed episodes or insights wait: "
                    f"sonality enrich --persona {report.persona_id} --retry-failed"
                )
        if not reports:
            click.echo("no personas yet: nothing to enrich")

    emit(reports, as_json, text)
    for report in reports:
        if report.stopped_by is not None and report.stopped_by != "no_model":
            raise _stopped(report.persona_id, report.stopped_by)


def _backlog_text(b: Backlog) -> str:
    if b.empty:
        return f"{b.persona_id}: nothing pending"
    line = (
        f"{b.persona_id}: enrichment {b.enrichment_pending} pending, {b.enrichment_failed} "
        f"failed; insights {b.insights_pending} pending, {b.insights_failed} failed; "
        f"thinking {b.thinking_pending} pending, {b.thinking_failed} failed"
    )
    if b.enrichment_failed or b.insights_failed:
        line += f"\n  retry what was given up: sonality enrich --persona {b.persona_id}"
        line += " --retry-failed"
    return line


@click.command()
@click.option("--persona", "persona_id", help="One persona (default: every persona).")
@json_option
@click.pass_obj
@run
async def pending(state: CliState, persona_id: str | None, as_json: bool) -> None:
    """Show what waits for a model, per persona: episodes to enrich, insights to retry,
    turns to think about (pending, and failed or given up). Reads only."""
    async with state.reads() as reads:
        ids = [persona_id] if persona_id else [p.id for p in await reads.personas()]
        found = [await reads.backlog(pid) for pid in ids]
    emit(found, as_json, lambda: lines(found, _backlog_text, "no personas yet"))


def _stopped(persona_id: str, reason: str) -> SonalityError:
    """The error of the kind that stopped an enrichment pass (the model, or writers that
    kept conflicting); the episodes left stay pending for the next pass."""
    from sonality.errors import ConflictError, LLMError, LLMResponseInvalid, LLMUnavailable

    if reason == "llm_unavailable":
        return LLMUnavailable("enrichment stopped: the model is unreachable", persona_id=persona_id)
    if reason == "llm_invalid":
        return LLMResponseInvalid(
            "enrichment stopped: the model's replies did not validate", persona_id=persona_id
        )
    if reason == "conflict":
        return ConflictError("enrichment stopped: writers kept conflicting", persona_id=persona_id)
    return LLMError("enrichment stopped", persona_id=persona_id, reason=reason)
