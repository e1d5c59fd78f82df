"""The memory-backend commands: ``persona create|list|show``, ``record``, ``ingest``,
``context``, the reads (``beliefs``, ``facts``, ``episodes``) and ``enrich``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sonality.cli.shell import CliState, emit, json_option, lines, persona_option, run

if TYPE_CHECKING:
    from sonality.errors import SonalityError
    from sonality.models import Belief, Episode, Persona, UserFact

__all__ = [
    "beliefs",
    "context",
    "enrich",
    "episodes",
    "facts",
    "ingest",
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
    as_json: bool,
) -> None:
    """Create persona PERSONA_ID with a core identity and, optionally, a self-model of
    traits, values and goals (both immutable)."""
    if (identity is None) == (identity_file is None):
        raise click.UsageError("give exactly one of --identity or --identity-file")
    text = identity
    if identity_file is not None:
        import asyncio

        text = await asyncio.to_thread(identity_file.read_text, "utf-8")
    assert text is not None
    from sonality.models import SelfModel

    async with state.app() as app:
        created = await app.create_persona(
            persona_id,
            name=name,
            core_identity=text,
            self_model=SelfModel(traits=traits, values=values, goals=goals),
        )
    emit(created, as_json, lambda: click.echo(f"created {_persona_text(created)}"))


@persona.command("list")
@json_option
@click.pass_obj
@run
async def persona_list(state: CliState, as_json: bool) -> None:
    """List personas."""
    async with state.app() as app:
        personas = await app.personas()
    emit(personas, as_json, lambda: lines(personas, _persona_text, "no personas yet"))


@persona.command("show")
@click.argument("persona_id")
@json_option
@click.pass_obj
@run
async def persona_show(state: CliState, persona_id: str, as_json: bool) -> None:
    """Show one persona with its current snapshot."""
    async with state.app() as app:
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
    as_json: bool,
) -> None:
    """Record one exchange (and enrich it when a model is configured)."""
    async with state.app() as app:
        recorded = await app.record(
            persona_id,
            user_id=user_id,
            conversation_id=conversation_id,
            message=message,
            response=response,
            episode_id=episode_id,
        )
    ep = recorded.episode
    emit(
        recorded,
        as_json,
        lambda: click.echo(
            f"{'stored' if recorded.created else 'already stored'} {ep.id} "
            f"({ep.conversation_id}#{ep.turn}), enrichment {ep.enrichment_status.value}"
        ),
    )


def _line_id(persona_id: str, path: Path, line_no: int, raw: str) -> str:
    import hashlib

    digest = hashlib.sha256(f"{persona_id}\n{path.name}\n{line_no}\n{raw}".encode()).hexdigest()
    return f"ing_{digest[:32]}"


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
    """Record a JSONL file of exchanges, one per line.

    Each line: {"message": ..., "response": ..., "user_id"?: ..., "conversation_id"?: ...,
    "id"?: ...}. Lines without an id get one derived from the file name, line number and
    content, so re-running the same file is a no-op (resumable). Bad lines are reported
    with their number; good ones are kept.
    """
    import asyncio
    import json

    from sonality.errors import SonalityError, ValidationError

    rows = (await asyncio.to_thread(file.read_text, "utf-8")).splitlines()
    async with state.app() as app:
        await app.persona(persona_id)
        stored = skipped = 0
        bad: list[dict[str, Any]] = []
        with click.progressbar(list(enumerate(rows, 1)), label="ingesting", file=sys.stderr) as bar:
            for line_no, raw in bar:
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw)
                    if not isinstance(row, dict):
                        raise ValueError("a line must be a JSON object")
                    recorded = await app.record(
                        persona_id,
                        user_id=str(row.get("user_id", default_user)),
                        conversation_id=str(row.get("conversation_id", default_conversation)),
                        message=row["message"],
                        response=row.get("response", ""),
                        episode_id=row.get("id") or _line_id(persona_id, file, line_no, raw),
                        enrich=False,
                    )
                except (ValueError, KeyError, TypeError, SonalityError) as exc:
                    reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                    bad.append({"line": line_no, "error": reason})
                    continue
                if recorded.created:
                    stored += 1
                else:
                    skipped += 1
        report = None if no_enrich else await app.enrich_pending(persona_id)
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


def _echo_enrichment(report: Any) -> None:
    """One line for an enrichment pass (``sonality.service``'s report)."""
    line = f"enriched {report.enriched}, failed {report.failed}, pending {report.remaining}"
    if getattr(report, "embedded", 0):
        line += f", embedded {report.embedded}"
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
    async with state.app() as app:
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
    async with state.app() as app:
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
    async with state.app() as app:
        found = await app.facts(persona_id, user_id=user_id)
    emit(found, as_json, lambda: lines(found, _fact_text, "no facts yet"))


@click.command()
@persona_option
@click.option("--user", "user_id")
@click.option("--conversation", "conversation_id")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@json_option
@click.pass_obj
@run
async def episodes(
    state: CliState,
    persona_id: str,
    user_id: str | None,
    conversation_id: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List recent episodes, newest first."""
    async with state.app() as app:
        found = await app.episodes(
            persona_id, user_id=user_id, conversation_id=conversation_id, limit=limit
        )
    emit(found, as_json, lambda: lines(found, _episode_text, "no episodes"))


@click.command()
@click.option("--persona", "persona_id", help="Only this persona (default: all).")
@json_option
@click.pass_obj
@run
async def enrich(state: CliState, persona_id: str | None, as_json: bool) -> None:
    """Enrich pending episodes, oldest first, per persona; first embed the episodes a
    remote embedder failed on."""
    async with state.app() as app:
        ids = [persona_id] if persona_id else [p.id for p in await app.personas()]
        reports = [await app.enrich_pending(pid) for pid in ids]

    def text() -> None:
        for report in reports:
            click.echo(f"{report.persona_id}: ", nl=False)
            _echo_enrichment(report)

    emit(reports, as_json, text)
    for report in reports:
        if report.stopped_by is not None and report.stopped_by != "no_model":
            raise _stopped(report.persona_id, report.stopped_by)


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
