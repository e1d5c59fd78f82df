"""``sonality``: a thin command-line shell over the facade, and the one list of its
commands.

Each command opens the app from settings (``shell.CliState``), calls the facade, and prints
the result (``shell.emit``: text, or JSON with ``--json``); an error becomes one line on
stderr and its kind's exit code. Heavy modules (litellm, the drivers, the scheduler) load
inside the commands, so ``sonality --help`` stays fast. Logs go to stderr.

Every command is named below, in one list (``COMMANDS``): nothing registers itself by being
imported. One module per group of commands, each importing only ``shell``. The group loads a
command's module when that command is looked up (``main.get_command``), so a read command
imports its own module only, not the server's or the evaluation suite's; ``--help`` looks
up, and so loads, every command to list its short help.
"""

from __future__ import annotations

from importlib import import_module

import click

from sonality import __version__
from sonality.cli.shell import CliState, SonalityGroup

__all__ = ["COMMANDS", "main"]

COMMANDS: dict[str, str] = {
    # schema
    "migrate": "schema:migrate",
    "doctor": "schema:doctor",
    # memory backend
    "persona": "memory:persona",
    "record": "memory:record",
    "ingest": "memory:ingest",
    "context": "memory:context",
    "beliefs": "memory:beliefs",
    "facts": "memory:facts",
    "episodes": "memory:episodes",
    "enrich": "memory:enrich",
    "pending": "memory:pending",
    # forgetting, correcting, moving
    "forget": "data:forget",
    "episode": "data:episode",
    "fact": "data:fact",
    "erasures": "data:erasures",
    "export": "data:export",
    "import": "data:import_",
    "copy": "data:copy",
    # reflection
    "reflect": "reflection:reflect",
    "reflections": "reflection:reflections",
    "snapshot": "reflection:snapshot",
    "worker": "reflection:worker",
    # the HTTP server and its keys
    "serve": "serve:serve",
    "mcp": "serve:mcp",
    "key": "serve:key",
    # full agent, sample, Neo4j Browser
    "chat": "chat:chat",
    "demo": "demo:demo",
    "browse": "browse:browse",
    # evaluation suite
    "eval": "eval:eval_group",
}
"""Each top-level command's name → ``module:attribute`` in :mod:`sonality.cli`."""

SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "persona": ("data:persona_delete", "biography:biography")
}
"""Subcommands added to a group that another module defines (``persona delete`` lives with
the other erasures, ``persona biography`` in a module of its own)."""


def _load(where: str) -> click.Command:
    module, _, attribute = where.partition(":")
    command = getattr(import_module(f"sonality.cli.{module}"), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"sonality.cli.{where} is not a click command")
    return command


class LazyGroup(SonalityGroup):
    """The root group: lists every name in ``COMMANDS`` and imports a command's module on
    first lookup."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            command = _load(COMMANDS[cmd_name])
            if isinstance(command, click.Group):
                for where in SUBCOMMANDS.get(cmd_name, ()):
                    command.add_command(_load(where))
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
