"""``sonality chat``: talk with a persona in the terminal, in full-agent mode (``respond``).

Each line you type is answered at once by the Talker; the Thinker deliberates in the
background between your lines. Slash commands look inside the persona's mind:

    /narrative      the conversation's internal narrative (after the Thinker catches up)
    /beliefs        the persona's beliefs
    /facts          what it keeps about you
    /why TOPIC      the evidence behind a belief: the exchanges that moved it
    /reflect        consolidate the persona's snapshot now
    /help, /quit

A model is required: ``SONALITY_MODEL`` (and friends), or ``--llm package.module:callable``
— a factory called with the settings that returns an object satisfying the LLM port (the
same plug-in point as the worker's). Logs are hidden unless ``--verbose``.
"""

from __future__ import annotations

import sys
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sonality.cli.shell import CliState, llm_option, persona_option, run

if TYPE_CHECKING:
    from sonality import Sonality
    from sonality.models import Persona

__all__ = ["chat"]

HELP = """commands:
  /narrative      the conversation's internal narrative
  /beliefs        my beliefs
  /facts          what I keep about you
  /why TOPIC      the evidence behind one of my beliefs
  /reflect        consolidate my self-description now
  /quit           leave (background thinking is finished first)"""

_THINK_SECONDS = 60.0
"""How long /narrative waits for background thinking before showing what is committed."""


def _read_line(prompt: str) -> str | None:
    if _EDITING:
        try:
            return input(prompt)  # readline: arrows, Ctrl-R, history
        except EOFError:
            return None
    click.echo(prompt, nl=False)
    sys.stdout.flush()
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\n")


_EDITING: list[Path] = []
"""The history file while line editing is on (a terminal and the readline module)."""


def _line_editing() -> None:
    """On a terminal, edit lines with readline and keep their history across sessions in
    the user state directory (``chat_history``, the last 1000 lines)."""
    if not sys.stdin.isatty():
        return
    try:
        import readline
    except ImportError:  # Windows without pyreadline: plain lines
        return
    from platformdirs import user_state_dir

    history = Path(user_state_dir("sonality", appauthor=False)) / "chat_history"
    readline.set_history_length(1000)
    with suppress(OSError):  # none yet: the first session
        readline.read_history_file(history)
    _EDITING.append(history)


def _save_history() -> None:
    if not _EDITING:
        return
    import readline

    history = _EDITING.pop()
    try:
        history.parent.mkdir(parents=True, exist_ok=True)
        readline.write_history_file(history)
    except OSError:
        pass  # history is a convenience


async def _command(app: Sonality, persona: Persona, user_id: str, cid: str, line: str) -> bool:
    """Run one slash command; False means quit."""
    from sonality.errors import SonalityError

    name, _, argument = line[1:].partition(" ")
    name, argument = name.lower(), argument.strip()
    try:
        if name in ("quit", "exit", "q"):
            return False
        if name == "help":
            click.echo(HELP)
        elif name == "narrative":
            await app.drain(persona.id, conversation_id=cid, max_seconds=_THINK_SECONDS)
            narrative = await app.narrative(persona.id, conversation_id=cid)
            if narrative is None:
                click.echo("(no narrative yet)")
            else:
                click.echo(f"[narrative v{narrative.version}, after turn {narrative.turn}]")
                click.echo(narrative.text)
        elif name == "beliefs":
            beliefs = await app.beliefs(persona.id)
            for b in beliefs:
                click.echo(
                    f"{b.topic:<28} {b.position:+.3f}  confidence {b.confidence:.2f}  "
                    f"evidence {b.evidence_count}"
                )
            if not beliefs:
                click.echo("(no beliefs yet)")
        elif name == "facts":
            facts = await app.facts(persona.id, user_id=user_id)
            for f in facts:
                click.echo(f"[{f.kind.value}, severity {f.severity}] {f.text}")
            if not facts:
                click.echo("(nothing kept about you yet)")
        elif name == "why":
            if not argument:
                click.echo("usage: /why TOPIC")
                return True
            await _why(app, persona, argument)
        elif name == "reflect":
            report = await app.reflect(persona.id, force=True)
            click.echo(
                f"reflection {report.outcome}"
                + (f" ({report.reason})" if report.reason else "")
                + (f": snapshot v{report.snapshot_version}" if report.snapshot_version else "")
            )
        else:
            click.echo(f"unknown command /{name}; /help lists them")
    except SonalityError as exc:
        click.echo(f"error: {exc}")
    return True


async def _why(app: Sonality, persona: Persona, topic: str) -> None:
    from sonality.models import normalise_topic

    try:
        key = normalise_topic(topic)
    except ValueError:
        click.echo("usage: /why TOPIC")
        return
    belief = next((b for b in await app.beliefs(persona.id) if b.topic == key), None)
    if belief is None:
        click.echo(f"(no belief about {key} yet)")
        return
    click.echo(
        f"{key}: {belief.position:+.3f}, confidence {belief.confidence:.2f}, "
        f"{belief.evidence_count} piece{'' if belief.evidence_count == 1 else 's'} of evidence"
    )
    edges = await app.evidence(persona.id, key)
    for edge, episode in edges:
        said = " ".join(episode.user_message.split())
        said = said if len(said) <= 90 else said[:89] + "…"
        click.echo(
            f"  {edge.side(belief.position):<9} {edge.delta:+.4f}  "
            f"{episode.conversation_id}#{episode.turn} "
            f"({episode.created_at:%Y-%m-%d}): {said}"
        )
    if not edges:
        click.echo("  (the staged evidence has not committed yet)")


@click.command()
@persona_option
@click.option("--user", "user_id", required=True, help="Who you are to the persona.")
@click.option(
    "--conversation",
    "conversation_id",
    help="Continue this conversation (default: a new one named after the time).",
)
@click.option(
    "--mode",
    type=click.Choice(["baseline", "threads", "controller", "full"]),
    help="Override the persona's runtime mode for this session.",
)
@click.option(
    "--affect",
    type=click.Choice(["off", "talker", "thinker"]),
    help="Override the persona's affect placement for this session.",
)
@llm_option
@click.option("--verbose", is_flag=True, help="Show the service's logs on stderr.")
@click.pass_obj
@run
async def chat(
    state: CliState,
    persona_id: str,
    user_id: str,
    conversation_id: str | None,
    mode: str | None,
    affect: str | None,
    llm_spec: str | None,
    verbose: bool,
) -> None:
    """Chat with a persona in the terminal (full-agent mode)."""
    import asyncio

    from sonality.errors import LLMUnavailable
    from sonality.wiring import configure_logging, count_tokens

    settings = state.settings
    if not verbose:
        configure_logging(settings.log_format, "ERROR")
    if not (llm_spec or settings.model):
        raise LLMUnavailable(
            "chat needs a model: set SONALITY_MODEL (see README) or pass "
            "--llm package.module:callable"
        )
    async with state.app(llm_spec=llm_spec) as app:
        persona = await app.persona(persona_id)
        await asyncio.to_thread(count_tokens, "load the tokenizer before the first turn")
        cid = conversation_id or datetime.now(UTC).strftime("chat-%Y%m%d-%H%M%S")
        click.echo(
            f"Talking with {persona.name} ({persona.id}) as {user_id}, conversation {cid}. "
            "/help lists commands, /quit leaves."
        )
        _line_editing()
        try:
            await _converse(app, persona, user_id, cid, mode=mode, affect=affect)
        finally:
            _save_history()


async def _converse(
    app: Sonality, persona: Persona, user_id: str, cid: str, *, mode: str | None, affect: str | None
) -> None:
    """The read-answer loop, until /quit or end of input."""
    import asyncio

    from sonality.errors import SonalityError

    while True:
        line = await asyncio.to_thread(_read_line, "you> ")
        if line is None:
            click.echo()
            break
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not await _command(app, persona, user_id, cid, line):
                break
            continue
        try:
            reply = await app.respond(
                persona.id,
                user_id=user_id,
                conversation_id=cid,
                message=line,
                mode=mode,
                affect=affect,
            )
        except SonalityError as exc:
            click.echo(f"error: {exc}")
            continue
        click.echo(f"{persona.id}> {reply.text}")
    click.echo("(finishing background thinking…)")
    await app.drain(persona.id, conversation_id=cid)
