"""The public surface of the ``sonality`` command as plain text: one line per command and
one per parameter (names, flags, default, required, multiple, type), walked from the click
tree. ``tests/cli/cli_surface.txt`` is the checked-in copy; after a deliberate change to the
CLI, rewrite it with ``python -m tests.cli.surface > tests/cli/cli_surface.txt`` and review
the diff like any other change to a public API."""

from __future__ import annotations

import enum
from pathlib import Path

import click

from sonality.cli import main

__all__ = ["EXPECTED", "listing"]

EXPECTED = Path(__file__).with_name("cli_surface.txt")


def _type(param_type: click.ParamType) -> str:
    if isinstance(param_type, click.Choice):
        return "choice[" + ",".join(map(str, param_type.choices)) + "]"
    if isinstance(param_type, click.IntRange | click.FloatRange):
        low = "" if param_type.min is None else str(param_type.min)
        high = "" if param_type.max is None else str(param_type.max)
        return (
            f"{param_type.name}{'(' if param_type.min_open else '['}{low},"
            f"{high}{')' if param_type.max_open else ']'}"
        )
    if isinstance(param_type, click.Path):
        flags = [
            name
            for name, on in (
                ("exists", param_type.exists),
                ("file", param_type.file_okay),
                ("dir", param_type.dir_okay),
                ("writable", param_type.writable),
                ("readable", param_type.readable),
            )
            if on
        ]
        kind = getattr(param_type.type, "__name__", "str")
        return f"path[{','.join(flags)}]->{kind}"
    return param_type.name


def _value(value: object) -> str:
    """A default as text; click's "no default" sentinel and None both read as ``-``."""
    if value is None or (isinstance(value, enum.Enum) and value.name == "UNSET"):
        return "-"
    return repr(value)


def _param(param: click.Parameter, ctx: click.Context) -> str:
    kind = "option" if isinstance(param, click.Option) else "argument"
    names = "/".join(param.opts)
    if param.secondary_opts:
        names += " | " + "/".join(param.secondary_opts)
    fields = [
        f"{kind} {names}",
        f"dest={param.name}",
        f"type={_type(param.type)}",
        f"default={_value(param.get_default(ctx, call=False))}",
    ]
    if param.required:
        fields.append("required")
    if param.multiple:
        fields.append("multiple")
    if param.nargs != 1:
        fields.append(f"nargs={param.nargs}")
    if not param.expose_value:
        fields.append("not-exposed")
    if param.is_eager:
        fields.append("eager")
    if param.envvar:
        fields.append(f"envvar={param.envvar}")
    if isinstance(param, click.Option):
        if param.is_flag:
            fields.append("flag")
        if param.count:
            fields.append("count")
        if param.hidden:
            fields.append("hidden")
        if param.metavar:
            fields.append(f"metavar={param.metavar}")
    return "  " + " ".join(fields)


def _walk(command: click.Command, ctx: click.Context, path: str, out: list[str]) -> None:
    kind = "group" if isinstance(command, click.Group) else "command"
    out.append(f"{path} ({kind}{', hidden' if command.hidden else ''})")
    out.extend(_param(param, ctx) for param in command.get_params(ctx))
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            with sub.make_context(name, [], parent=ctx, resilient_parsing=True) as sub_ctx:
                _walk(sub, sub_ctx, f"{path} {name}", out)


def listing(root: click.Command = main, name: str = "sonality") -> str:
    """The surface of ``root`` (by default ``sonality.cli:main``), one line per command and
    parameter, commands in the order ``--help`` lists them."""
    out: list[str] = []
    with root.make_context(name, [], resilient_parsing=True) as ctx:
        _walk(root, ctx, name, out)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(listing(), end="")
