"""``sonality persona biography``: the persona's own past (add, list, remove entries)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from sonality.cli.shell import CliState, emit, json_option, lines, run

if TYPE_CHECKING:
    from sonality.models import BiographyEntry

__all__ = ["biography"]


def _entry_text(entry: BiographyEntry) -> str:
    flat = " ".join(entry.text.split())
    return f"{entry.id} [{entry.source.value}, importance {entry.importance}] {flat}"


def _shown(entry: BiographyEntry) -> dict[str, Any]:
    """The entry as ``--json`` prints it: without its vector."""
    return entry.model_dump(mode="json", exclude={"vector"})


@click.group()
def biography() -> None:
    """The persona's own past: backstory and its own statements, recalled by the affect
    stages by meaning and importance (never by age)."""


@biography.command("add")
@click.argument("persona_id")
@click.argument("text")
@click.option(
    "--importance", default=5, show_default=True, type=click.IntRange(1, 10), help="1-10."
)
@click.option(
    "--source",
    type=click.Choice(["authored", "statement"]),
    default="authored",
    show_default=True,
    help="Backstory you wrote, or something the persona said about itself.",
)
@json_option
@click.pass_obj
@run
async def biography_add(
    state: CliState, persona_id: str, text: str, importance: int, source: str, as_json: bool
) -> None:
    """Add TEXT to the past of PERSONA_ID (an entry it already holds is not added twice)."""
    async with state.app() as app:
        entry = await app.add_biography(persona_id, text, importance=importance, source=source)
    emit(_shown(entry), as_json, lambda: click.echo(f"kept {_entry_text(entry)}"))


@biography.command("list")
@click.argument("persona_id")
@json_option
@click.pass_obj
@run
async def biography_list(state: CliState, persona_id: str, as_json: bool) -> None:
    """List the entries of the persona's past, oldest first."""
    async with state.reads() as app:
        found = await app.biography(persona_id)
    emit([_shown(e) for e in found], as_json, lambda: lines(found, _entry_text, "no past yet"))


@biography.command("remove")
@click.argument("persona_id")
@click.argument("entry_id")
@json_option
@click.pass_obj
@run
async def biography_remove(state: CliState, persona_id: str, entry_id: str, as_json: bool) -> None:
    """Remove one entry of the persona's past."""
    async with state.app() as app:
        entry = await app.remove_biography(persona_id, entry_id=entry_id)
    emit(_shown(entry), as_json, lambda: click.echo(f"removed {_entry_text(entry)}"))
