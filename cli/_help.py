"""Help pages of the command line: the usage line, the description re-flowed paragraph by
paragraph, then the arguments, options and commands as two columns (names, help) in panels, as wide
as the terminal (80 columns when it is not one, at most MAX_WIDTH).

Typer's own help shows each parameter's Python type (`--help <bool>`, `--json <str>`), braces
around required arguments (`{name}`), `[[ARGS]...]...` and keeps the line breaks of docstrings.
These classes draw the page from the click parameters themselves. `HelpGroup` gives every command
and group registered on it (by whoever adds one) the same pages; the classes add no state, so the
switch of class is safe.
"""
from __future__ import annotations

import inspect
import io
import shutil

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer import echo as click_echo
from typer.core import TyperCommand, TyperGroup

MAX_WIDTH = 100


def paragraphs(text: str | None) -> list[str]:
    """The paragraphs of a help text with their line breaks removed ("\\b" keeps a paragraph's
    lines, as in click)."""
    out = []
    for p in inspect.cleandoc(text or "").split("\n\n"):
        if p.startswith("\b"):
            out.append(p[1:].strip("\n"))
        elif p.strip():
            out.append(" ".join(p.split()))
    return out


def _argument_label(p) -> str:
    if p.metavar:
        return p.metavar
    label = p.name.upper() + ("..." if p.nargs != 1 else "")
    return label if p.required else f"[{label}]"


def _option_label(p) -> str:
    names = sorted(p.opts, key=lambda s: (s.startswith("--"), s))          # -k, --pattern
    label = ", ".join(names)
    if p.secondary_opts:
        label += " / " + ", ".join(p.secondary_opts)
    if not (p.is_flag or getattr(p, "count", False)):
        label += " " + (p.metavar or p.name.upper())
    return label


def _param_help(p) -> str:
    text = " ".join(paragraphs(getattr(p, "help", None)))
    extra = []
    default = getattr(p, "default", None)
    if (p.param_type_name == "option" and not p.is_flag and getattr(p, "show_default", True) is not False
            and default not in (None, (), [], "") and not callable(default)):
        extra.append(f"[default: {default}]")
    if p.required and p.param_type_name == "option":       # the usage line shows required arguments
        extra.append("[required]")
    return " ".join([text, *extra]).strip()


def _width() -> int:
    return min(shutil.get_terminal_size((80, 24)).columns, MAX_WIDTH)


def _panel(title: str, rows) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold", ratio=1)
    for name, text in rows:
        grid.add_row(Text(name), Text(text))      # Text: "[default: 30]" is not rich markup
    return Panel(grid, title=title, title_align="left", box=box.ROUNDED, border_style="dim")


def render(command, ctx, commands=()) -> str:
    """The help page of `command` as text (with colours; click strips them where the output is not
    a terminal)."""
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    parts = [Text.assemble(("Usage: ", "bold"), usage), Text()]
    for para in paragraphs(command.help):
        parts += [Text(para), Text()]
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [(_argument_label(p), _param_help(p)) for p in params if p.param_type_name == "argument"]
    options = [(_option_label(p), _param_help(p)) for p in params if p.param_type_name == "option"]
    if arguments:
        parts.append(_panel("Arguments", arguments))
    if options:
        parts.append(_panel("Options", options))
    if commands:
        parts.append(_panel("Commands", commands))
    if command.epilog:
        parts += [Text(para) for para in paragraphs(command.epilog)]
    buf = io.StringIO()
    Console(file=buf, width=_width(), force_terminal=True, color_system="standard",
            highlight=False).print(Group(*parts))
    return buf.getvalue()


def _usage_pieces(command, ctx) -> list[str]:
    pieces = [command.options_metavar] if command.options_metavar else []
    return pieces + [_argument_label(p) for p in command.get_params(ctx) if p.param_type_name == "argument"]


class HelpCommand(TyperCommand):
    """A typer command with the help page above."""

    def collect_usage_pieces(self, ctx):
        return _usage_pieces(self, ctx)

    def format_help(self, ctx, formatter):
        formatter.write(render(self, ctx))


class HelpGroup(TyperGroup):
    """A typer group with the help page above, for itself and for the commands added to it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for cmd in self.commands.values():
            _adopt(cmd)

    def add_command(self, cmd, name=None):
        super().add_command(_adopt(cmd), name)

    def collect_usage_pieces(self, ctx):
        return _usage_pieces(self, ctx) + [self.subcommand_metavar]

    def parse_args(self, ctx, args):
        # without arguments: the help page, exit status 2 (typer prints its own page as a side
        # effect of building the message and then drops the error)
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click_echo(ctx.get_help(), color=ctx.color)
            ctx.exit(2)
        return super().parse_args(ctx, args)

    def format_help(self, ctx, formatter):
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.short_help or (paragraphs(cmd.help) or [""])[0]))
        formatter.write(render(self, ctx, rows))


def _adopt(cmd):
    if type(cmd) is TyperCommand:
        cmd.__class__ = HelpCommand
    elif type(cmd) is TyperGroup:
        cmd.__class__ = HelpGroup
        for sub in cmd.commands.values():
            _adopt(sub)
    return cmd
