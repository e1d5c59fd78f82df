"""Forgetting, correcting and moving data: ``forget``, ``episode delete``, ``fact add``,
``fact retract`` and ``fact correct``, ``persona delete``, the audit records they leave
(``erasures``), ``export``, ``import`` and ``copy``.

Destructive commands ask before they act. ``--yes`` skips the question; without a terminal
to ask on (CI, a pipe) and without ``--yes`` they refuse with one line (exit 2) and change
nothing.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sonality.cli.shell import CliState, emit, json_option, lines, persona_option, run

if TYPE_CHECKING:
    from sonality.models import Erasure, Imported, UserErasure, UserFact
    from sonality.wiring import Store

__all__ = [
    "copy",
    "episode",
    "erasures",
    "export",
    "fact",
    "forget",
    "import_",
    "persona_delete",
]

yes_option = click.option(
    "--yes", "-y", is_flag=True, help="Do it without asking (needed without a terminal)."
)


def confirm(question: str, yes: bool) -> None:
    """Go on when ``--yes`` was given or the user agrees on the terminal; refuse (exit 2)
    without a terminal; abort (exit 1) when the user declines."""
    if yes:
        return
    if not sys.stdin.isatty():
        from sonality.errors import ValidationError

        raise ValidationError(
            "refusing to erase without confirmation: no terminal to ask on; pass --yes"
        )
    click.confirm(question, abort=True, err=True)


def _erasure_text(record: Erasure, what: str) -> str:
    parts = [
        f"{what}: {record.episodes} episodes, {record.facts} facts, "
        f"{record.insights} insights removed",
        f"beliefs recomputed {record.beliefs_changed}, removed {record.beliefs_removed}",
    ]
    if record.review_from_version is not None:
        parts.append(f"snapshot versions from v{record.review_from_version} reverted")
    return "; ".join(parts) + f" (audit record {record.id})"


def _fact_text(f: UserFact) -> str:
    state = "retracted" if f.retracted else "active"
    return f"{f.id} [{f.kind.value}, severity {f.severity}, {state}] {f.text}"


@click.command()
@click.option("--persona", "persona_id", help="The persona to forget the user in.")
@click.option(
    "--all-personas", is_flag=True, help="Forget the user in every persona (an erasure request)."
)
@click.option("--user", "user_id", required=True, help="The user to forget.")
@yes_option
@json_option
@click.pass_obj
@run
async def forget(
    state: CliState,
    persona_id: str | None,
    all_personas: bool,
    user_id: str,
    yes: bool,
    as_json: bool,
) -> None:
    """Forget a user: their conversations, episodes, facts, insights, affect state,
    monologue, narratives and usage go, every belief their episodes moved is recomputed
    from the remaining evidence, and snapshot versions that may quote them are reverted
    at once. An audit record (no user text) is kept. With --all-personas, in every
    persona, one at a time: run it again after an interruption to finish."""
    from sonality.errors import ValidationError

    if all_personas == (persona_id is not None):
        raise ValidationError("name a persona (--persona) or --all-personas, not both")
    async with state.app(with_model=False) as app:
        if persona_id is None:
            confirm(f"Forget user {user_id!r} in every persona? This cannot be undone", yes)
            done = await app.forget_everywhere(user_id=user_id)
            emit(done, as_json, lambda: lines(done, _everywhere_line, "no personas"))
            return
        await app.persona(persona_id)
        confirm(f"Forget user {user_id!r} of persona {persona_id!r}? This cannot be undone", yes)
        record = await app.forget_user(persona_id, user_id=user_id)
    emit(record, as_json, lambda: click.echo(_erasure_text(record, "forgot the user")))


def _everywhere_line(done: UserErasure) -> str:
    if done.erasure is None:
        what = {"erased_before": "erased before", "absent": "never met the user"}
        return f"{done.persona_id}: {what[done.status.value]}"
    return f"{done.persona_id}: {_erasure_text(done.erasure, 'forgot the user')}"


@click.group()
def episode() -> None:
    """Delete stored exchanges."""


@episode.command("delete")
@persona_option
@click.argument("episode_id")
@yes_option
@json_option
@click.pass_obj
@run
async def episode_delete(
    state: CliState, persona_id: str, episode_id: str, yes: bool, as_json: bool
) -> None:
    """Delete exchange EPISODE_ID: what hangs off it goes, its conversation is relinked
    around it and the beliefs it moved are recomputed."""
    async with state.app(with_model=False) as app:
        await app.persona(persona_id)
        confirm(f"Delete episode {episode_id!r} of persona {persona_id!r}?", yes)
        record = await app.delete_episode(persona_id, episode_id=episode_id)
    emit(record, as_json, lambda: click.echo(_erasure_text(record, "deleted the episode")))


@click.group()
def fact() -> None:
    """Add, retract or correct facts about users."""


@fact.command("add")
@persona_option
@click.option("--user", "user_id", required=True, help="The user the fact is about.")
@click.option("--episode", "episode_id", required=True, help="The user's exchange it comes from.")
@click.option("--text", required=True, help="The fact.")
@click.option("--kind", type=click.Choice(["constraint", "preference", "fact"]), default="fact")
@click.option("--severity", type=click.IntRange(1, 5), default=1, show_default=True)
@json_option
@click.pass_obj
@run
async def fact_add(
    state: CliState,
    persona_id: str,
    user_id: str,
    episode_id: str,
    text: str,
    kind: str,
    severity: int,
    as_json: bool,
) -> None:
    """Keep a fact about a user that the model did not extract, backed by one of the
    user's exchanges (deleting it deletes the fact); the same fact twice is kept once."""
    async with state.app(with_model=False) as app:
        found = await app.add_fact(
            persona_id,
            user_id=user_id,
            episode_id=episode_id,
            text=text,
            kind=kind,
            severity=severity,
        )
    emit(found, as_json, lambda: click.echo(f"kept {_fact_text(found)}"))


@fact.command("retract")
@persona_option
@click.argument("fact_id")
@json_option
@click.pass_obj
@run
async def fact_retract(state: CliState, persona_id: str, fact_id: str, as_json: bool) -> None:
    """Retract fact FACT_ID: it stays stored but leaves every context."""
    async with state.app(with_model=False) as app:
        found = await app.retract_fact(persona_id, fact_id=fact_id)
    emit(found, as_json, lambda: click.echo(f"retracted {_fact_text(found)}"))


@fact.command("correct")
@persona_option
@click.argument("fact_id")
@click.option("--text", required=True, help="The corrected text.")
@click.option("--kind", type=click.Choice(["constraint", "preference", "fact"]))
@click.option("--severity", type=click.IntRange(1, 5))
@json_option
@click.pass_obj
@run
async def fact_correct(
    state: CliState,
    persona_id: str,
    fact_id: str,
    text: str,
    kind: str | None,
    severity: int | None,
    as_json: bool,
) -> None:
    """Correct fact FACT_ID in place (its text, and optionally kind or severity)."""
    async with state.app(with_model=False) as app:
        found = await app.correct_fact(
            persona_id, fact_id=fact_id, text=text, kind=kind, severity=severity
        )
    emit(found, as_json, lambda: click.echo(f"corrected {_fact_text(found)}"))


@click.command("delete")
@click.argument("persona_id")
@yes_option
@json_option
@click.pass_obj
@run
async def persona_delete(state: CliState, persona_id: str, yes: bool, as_json: bool) -> None:
    """Delete persona PERSONA_ID and everything it owns (its audit records stay); every
    API key loses its grant of it (a key left with none is revoked)."""
    async with state.app(with_model=False) as app:
        await app.persona(persona_id)
        confirm(f"Delete persona {persona_id!r} and all its data? This cannot be undone", yes)
        record = await app.delete_persona(persona_id)
    emit(record, as_json, lambda: click.echo(f"deleted persona {persona_id} ({record.id})"))


def _audit_line(record: Erasure) -> str:
    removed = (
        f"{record.episodes} episodes, {record.facts} facts, {record.insights} insights removed"
    )
    beliefs = f"beliefs recomputed {record.beliefs_changed}, removed {record.beliefs_removed}"
    review = (
        f"; snapshot from v{record.review_from_version} reverted"
        if record.review_from_version is not None
        else ""
    )
    return (
        f"{record.created_at:%Y-%m-%d %H:%M:%S}  {record.kind.value:<8} {record.id}  "
        f"subject {record.subject[:16]}…  {removed}; {beliefs}{review}"
    )


@click.command()
@persona_option
@json_option
@click.pass_obj
@run
async def erasures(state: CliState, persona_id: str, as_json: bool) -> None:
    """The audit records of the persona's erasures, oldest first: what kind, when, the
    keyed subject (no id or text in clear) and what was removed or recomputed. A deleted
    persona's records are still listed."""
    async with state.reads() as app:
        records = await app.erasures(persona_id)
    emit(records, as_json, lambda: lines(records, _audit_line, "no erasures yet"))


@click.command()
@click.option(
    "--persona", "persona_ids", multiple=True, help="Persona to export (repeat; default: all)."
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write to this file instead of stdout.",
)
@click.pass_obj
@run
async def export(state: CliState, persona_ids: tuple[str, ...], output: Path | None) -> None:
    """Export personas as JSON lines (every record with its id; canonical order, so equal
    data is equal text). `sonality import` reads it into any store."""
    async with state.reads() as app:
        ids = list(persona_ids) or [p.id for p in await app.personas()]
        text = await app.export(ids)
    if output is None:
        click.echo(text, nl=False)
    else:
        import asyncio

        await asyncio.to_thread(output.write_text, text, "utf-8")
        click.echo(f"exported {len(ids)} personas to {output}", err=True)


def _imported_text(results: list[Imported]) -> None:
    lines(
        results,
        lambda r: f"{r.persona_id}: {r.status.value} ({r.episodes} episodes, {r.beliefs} beliefs)",
        "nothing to import",
    )


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@click.pass_obj
@run
async def import_(state: CliState, file: Path, as_json: bool) -> None:
    """Import an export FILE: ids preserved; a persona already held with the same data is
    left unchanged, one held with other data is refused (nothing written)."""
    import asyncio

    from sonality.errors import ValidationError

    try:
        text = await asyncio.to_thread(file.read_text, "utf-8")
    except UnicodeDecodeError:
        raise ValidationError(f"{file}: not UTF-8 text") from None
    async with state.app(with_model=False) as app:
        results = await app.import_(text)
    emit(results, as_json, lambda: _imported_text(results))


@asynccontextmanager
async def _store_at(state: CliState, url: str, *, migrate: bool) -> AsyncIterator[Store]:
    from pydantic import ValidationError as PydanticValidationError

    from sonality.errors import ConfigError
    from sonality.wiring import open_store

    try:
        settings = type(state.settings)(store=url)
    except PydanticValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise ConfigError(message.replace("SONALITY_STORE", "the store URL")) from None
    store = await open_store(settings)
    try:
        if migrate:
            await store.migrate()
        yield store
    finally:
        await store.close()


@click.command()
@click.option("--from", "source", required=True, metavar="URL", help="Store to copy from.")
@click.option("--to", "target", required=True, metavar="URL", help="Store to copy into.")
@click.option("--persona", "persona_ids", multiple=True, help="Persona to copy (default: all).")
@json_option
@click.pass_obj
@run
async def copy(
    state: CliState, source: str, target: str, persona_ids: tuple[str, ...], as_json: bool
) -> None:
    """Copy personas between stores (sqlite:///… or bolt://…), as export + import would;
    the target is migrated first. Copying again changes nothing."""
    from sonality.wiring import copy_personas

    async with (
        _store_at(state, source, migrate=False) as src,
        _store_at(state, target, migrate=True) as dst,
    ):
        results = await copy_personas(src, dst, list(persona_ids) or None)
    emit(results, as_json, lambda: _imported_text(results))
