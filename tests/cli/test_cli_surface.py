"""The command line is a public API: its commands, options and arguments are pinned."""

from __future__ import annotations

import difflib
from pathlib import Path

import click

from tests.cli.surface import EXPECTED, listing


def test_cli_surface_matches_the_checked_in_listing() -> None:
    """Every command, subcommand, option and argument of `sonality` (names, flags, defaults,
    required, multiple, types and choices) is exactly the one in cli_surface.txt."""
    expected = EXPECTED.read_text("utf-8")
    actual = listing()
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            "cli_surface.txt",
            "sonality.cli:main",
        )
    )
    assert actual == expected, "the CLI surface changed:\n" + diff


def test_listing_records_every_property_it_pins() -> None:
    """The walker writes nested commands and each pinned property of a parameter, so a
    change to any of them shows up as a difference."""

    @click.group()
    def root() -> None:
        """Root."""

    @root.group()
    def inner() -> None:
        """Inner."""

    @inner.command()
    @click.argument("files", nargs=-1, type=click.Path(exists=True, path_type=Path))
    @click.option("--tag", multiple=True, type=click.Choice(["a", "b"]), default=("a",))
    @click.option("--size", required=True, type=click.FloatRange(0, 1, max_open=True))
    @click.option("--fast/--slow", default=True)
    @click.option("-v", count=True, hidden=True)
    @click.option("--token", envvar="TOKEN", metavar="SECRET")
    def leaf(**_: object) -> None:
        """Leaf."""

    lines = listing(root, "root").splitlines()
    assert lines[0] == "root (group)"
    assert "root inner (group)" in lines and "root inner leaf (command)" in lines
    leaf_lines = lines[lines.index("root inner leaf (command)") + 1 :]
    assert leaf_lines[:6] == [
        "  argument files dest=files type=path[exists,file,dir,readable]->Path default=- nargs=-1",
        "  option --tag dest=tag type=choice[a,b] default=('a',) multiple",
        "  option --size dest=size type=float range[0,1) default=- required",
        "  option --fast | --slow dest=fast type=boolean default=True flag",
        "  option -v dest=v type=integer range[0,] default=0 count hidden",
        "  option --token dest=token type=text default=- envvar=TOKEN metavar=SECRET",
    ]


def test_every_sonality_command_the_docs_name_exists() -> None:
    """Docstrings, messages and the README name only commands that exist (no
    `sonality reset`, say): each "sonality WORD" in backquotes is a command of the CLI."""
    import re
    from pathlib import Path

    from sonality.cli import main

    root = Path(__file__).resolve().parents[2]
    files = [root / "README.md", *sorted((root / "sonality").rglob("*.py"))]
    named = {
        (path.name, word)
        for path in files
        for word in re.findall(r"`sonality ([a-z][a-z-]*)", path.read_text("utf-8"))
    }
    assert len(named) > 10
    commands = main.list_commands(click.Context(main))
    assert sorted(n for n in named if n[1] not in commands) == []
