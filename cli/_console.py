"""Terminal output of the command line, through rich: consoles as wide as the terminal ($COLUMNS
where it is set), tables whose cells wrap to that width, and the rule for when a progress display
may be drawn. Output that is not a terminal (a pipe, a file) is not wrapped unless $COLUMNS asks
for it: grep sees whole rows, and a report pasted into an issue keeps its lines."""
from __future__ import annotations

import os
import sys

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text


UNWRAPPED = 10_000


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):      # a closed or unusual stream
        return False


def console(stderr: bool = False, width: int | None = None) -> Console:
    """A console on sys.stdout (or sys.stderr) as they are when it prints (so CliRunner's capture
    works); no syntax highlighting, which would colour numbers and paths at random, and no emoji
    codes (":name:" in an error message stays as written)."""
    if width is None and not os.environ.get("COLUMNS") and not _isatty(sys.stderr if stderr else sys.stdout):
        width = UNWRAPPED
    return Console(stderr=stderr, width=width, highlight=False, emoji=False)


def emit(out: Console, renderable) -> None:
    """Print a table or grid; off a terminal without the blanks that pad its cells to the column
    width at the ends of lines."""
    if out.is_terminal:
        out.print(renderable)
        return
    with out.capture() as captured:
        out.print(renderable)
    out.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
    out.file.flush()


def table(*columns: str, no_wrap: tuple[str, ...] = (), min_width: dict | None = None) -> Table:
    """A table with a header line; a cell too wide for the console wraps at spaces and, where a
    word (a path) is longer than its column, folds inside the word. no_wrap: columns kept on one
    line; min_width: {column: width} for columns that should give way last."""
    # two spaces between columns: one of padding and the box's blank vertical line
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold")
    for name in columns:
        t.add_column(name, overflow="fold", no_wrap=name in no_wrap, min_width=(min_width or {}).get(name))
    return t


def print_table(columns, rows, *, out: Console | None = None, no_wrap: tuple[str, ...] = (),
                keep: tuple[str, ...] = ()) -> None:
    """Print `rows` (sequences of cells, as str) under the header `columns`. Where the console is
    wide enough for each column's longest word, cells wrap between words only ("tensorplug-trace
    0.1.0" becomes two lines, not "tensorplug-tr" and "ace 0.1.0"); the columns in `keep` stay
    on one line as long as the others can give way."""
    out = out or console()
    rows = [[str(c) for c in row] for row in rows]
    gaps = 2 * (len(columns) - 1)
    cells = {name: [name, *(r[i] for r in rows)] for i, name in enumerate(columns)}
    words = {name: max(len(w) for cell in col for w in cell.split() or [""]) for name, col in cells.items()}
    whole = {**words, **{name: max(map(len, cells[name])) for name in keep}}
    if sum(whole.values()) + gaps <= out.width:
        min_width = whole
    elif sum(words.values()) + gaps <= out.width:
        min_width = words
    else:
        min_width = None
    t = table(*columns, no_wrap=no_wrap, min_width=min_width)
    for row in rows:
        t.add_row(*(Text(c) for c in row))           # Text: "tensorplug[cuda]" is not markup
    emit(out, t)


def progress_wanted(enabled: bool, stream=None) -> bool:
    """Draw a progress display only when asked to and only on a terminal: a pipe or a file gets
    no progress lines."""
    return bool(enabled) and _isatty(sys.stderr if stream is None else stream)
