"""``sonality``: a thin command-line shell over the facade, and the one list of its
commands.

Each command opens the app from settings (``shell.CliState``), calls the facade, and prints
the result (``shell.emit``: text, or JSON with ``--json``); an error becomes one line on
stderr and its kind's exit code. Heavy modules (litellm, the drivers, the scheduler) load
inside the commands, so ``sonality --help`` stays fast. Logs go to stderr.

Every command is added below, by name, in one list: nothing registers itself by being
imported. One module per group of commands, each importing only ``shell``.
"""

from __future__ import annotations

import click

from sonality import __version__
from sonality.cli import browse, chat, data, demo, memory, reflection, schema, serve
from sonality.cli import eval as evaluation
from sonality.cli.shell import CliState, SonalityGroup

__all__ = ["main"]


@click.group(cls=SonalityGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sonality")
@click.option("-q", "--quiet", is_flag=True, help="Warnings and errors only; no progress bars.")
@click.option("-v", "--verbose", is_flag=True, help="Debug events on stderr, bars or not.")
@click.pass_context
def main(ctx: click.Context, quiet: bool, verbose: bool) -> None:
    """Sonality: long-term personality and memory for LLM agents.

    Configuration comes from SONALITY_* environment variables (see README). The default
    store is an embedded SQLite file in your user data directory.
    """
    if quiet and verbose:
        raise click.UsageError("give -q or -v, not both")
    ctx.obj = CliState(verbosity=-1 if quiet else int(verbose))


for command in (
    # schema
    schema.migrate,
    schema.doctor,
    # memory backend
    memory.persona,
    memory.record,
    memory.ingest,
    memory.context,
    memory.beliefs,
    memory.facts,
    memory.episodes,
    memory.enrich,
    # forgetting, correcting, moving
    data.forget,
    data.episode,
    data.fact,
    data.export,
    data.import_,
    data.copy,
    # reflection
    reflection.reflect,
    reflection.reflections,
    reflection.snapshot,
    reflection.worker,
    # the HTTP server and its keys
    serve.serve,
    serve.mcp,
    serve.key,
    # full agent, sample, Neo4j Browser
    chat.chat,
    demo.demo,
    browse.browse,
    # evaluation suite
    evaluation.eval_group,
):
    main.add_command(command)
memory.persona.add_command(data.persona_delete)
