"""Terminal output of the command line: tables fit 80 columns and use wider ones, --json is the
data as before, one progress line redrawn in place (none when not a terminal), clean help pages,
`tensorplug --version`."""
import io
import json
import re

import pytest
import typer.main
from rich.console import Console
from typer.testing import CliRunner

import tensorplug
from tensorplug.cli import _console, commands
from tensorplug.cli._help import MAX_WIDTH, paragraphs
from tensorplug.cli.app import app, backend_rows

runner = CliRunner()
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def invoke(*args, columns=80):
    r = runner.invoke(app, list(args), env={"COLUMNS": str(columns)}, prog_name="tensorplug")
    assert r.exit_code == 0, (r.output, r.exception)
    return r.output


def widest(text):
    return max(len(line.rstrip()) for line in text.splitlines())


# -- tables -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", [("backends", "list"), ("info",), ("backends", "show", "numpy"),
                                 ("backends", "show", "mpi")])
def test_tables_fit_80_columns(cmd):
    out = invoke(*cmd)
    assert widest(out) <= 80, out
    assert widest(invoke(*cmd, columns=60)) <= 60


def test_wider_terminals_get_rows_on_one_line():
    """At 80 columns the SELECTED cell of numpy wraps; at 160 each backend is one line."""
    rows, _ = backend_rows()
    wide = invoke("backends", "list", columns=160).splitlines()
    assert wide[0].split() == ["NAME", "KIND", "DEVICE", "VERSION", "ORIGIN", "STATUS", "SELECTED"]
    for row in rows:
        line = next(ln for ln in wide if ln.split()[:1] == [row["name"]])     # its row; notes follow the table
        assert row["kind"] in line and row["origin"] in line
        if row["selected"]:
            assert line.rstrip().endswith(f"yes ({row['selected_by']})")
    narrow = invoke("backends", "list", columns=80)
    assert widest(narrow) <= 80 < widest(invoke("backends", "list", columns=160))


def test_table_cells_are_not_markup():
    """A reason such as 'install tensorplug[cuda]' is printed as written, brackets included."""
    buf = io.StringIO()
    _console.print_table(["A", "B"], [["x", "install tensorplug[cuda] [bold]"]], out=Console(file=buf, width=80))
    assert "install tensorplug[cuda] [bold]" in buf.getvalue()


def test_table_wraps_long_cells_within_the_width():
    """Words wrap at spaces, a path longer than its column folds; nothing is cut off."""
    buf = io.StringIO()
    words = [f"word{i}" for i in range(60)]
    path = "/a/very/long/path" * 8
    _console.print_table(["NAME", "TEXT"], [["a", " ".join(words)], ["b", path]], out=Console(file=buf, width=80))
    lines = buf.getvalue().splitlines()
    assert widest("\n".join(lines)) <= 80 and lines[0].split() == ["NAME", "TEXT"]
    body = [ln[len("NAME  "):].strip() for ln in lines[2:]]     # the TEXT column
    first = [ln.split()[0] for ln in lines[2:]]
    b = first.index("b")
    assert " ".join(body[:b]).split() == words
    assert "".join(body[b:]) == path and len(body[b:]) > 1


# -- --json is the data, as before -------------------------------------------------------------------
def test_list_json_is_the_rows():
    rows, broken = backend_rows()
    data = json.loads(invoke("backends", "list", "--json", columns=40))
    assert data == {"backends": rows, "plugin_errors": broken, "config_error": None}
    assert set(rows[0]) == {"name", "kind", "device", "version", "origin", "available", "reason", "selected",
                            "selected_by", "selection_error"}


def test_info_json_keeps_its_keys_and_is_not_wrapped():
    data = json.loads(invoke("info", "--json", columns=40))
    for key in ("versions", "api_version", "executable", "devices", "communication", "settings",
                "config_error", "plugins"):
        assert key in data
    assert data["versions"]["tensorplug"] == tensorplug.__version__
    assert {"os", "cpu", "blas", "mpi", "cuda", "python", "install", "environment"} <= set(data)


# -- --version ------------------------------------------------------------------------------------------
def test_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output == f"tensorplug {tensorplug.__version__}\n"
    import importlib.metadata
    assert r.output.split()[1] == importlib.metadata.version("tensorplug")


# -- help pages -------------------------------------------------------------------------------------------
def _commands(group, path=()):
    for name, cmd in group.commands.items():
        yield (*path, name), cmd
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


ALL = [()] + [p for p, _ in _commands(typer.main.get_command(app))]


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "tensorplug")
def test_help_pages_are_clean(path):
    out = invoke(*path, "--help")
    assert widest(out) <= 80, out
    assert out.splitlines()[0].startswith(f"Usage: {' '.join(('tensorplug', *path))} [OPTIONS]")
    for odd in ("<bool>", "<str>", "<int", "<path>", "<list", "{", "[["):
        assert odd not in out, (odd, out)
    assert "--help" in out and "Show this message and exit." in out
    assert widest(invoke(*path, "--help", columns=200)) <= MAX_WIDTH


@pytest.mark.parametrize("path", [p for p, c in _commands(typer.main.get_command(app))],
                         ids=lambda p: " ".join(p))
def test_help_descriptions_are_reflowed(path):
    """Each paragraph of a command's description fills its lines: a line ends only where the next
    word would not fit (no line breaks of the docstring kept)."""
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    width = 80
    lines = [ln.rstrip() for ln in invoke(*path, "--help", columns=width).splitlines()]
    start = lines.index("") + 1
    for para in paragraphs(cmd.help):
        words, got = para.split(), []
        while len(" ".join(got).split()) < len(words):
            got.append(lines[start])
            start += 1
        assert " ".join(got).split() == words
        for line, nxt in zip(got, got[1:]):
            assert len(line) + 1 + len(nxt.split()[0]) > width, (line, nxt)
        assert lines[start] == ""
        start += 1


def test_usage_names_arguments_plainly():
    assert "Usage: tensorplug run [OPTIONS] SCRIPT [ARGS]..." in invoke("run", "--help")
    assert "Usage: tensorplug backends check [OPTIONS] NAME" in invoke("backends", "check", "--help")
    out = invoke("backends", "check", "--help", columns=100)
    assert re.search(r"--max-failures N +Failures printed in full \(all of them in --json\)\. +\[default: 30\]", out)
    assert re.search(r"-k, --pattern PATTERN +Only checks whose id contains PATTERN", out)
    assert "'pointwise.*[float16]'" in out


def test_a_usage_error_shows_the_clean_usage():
    r = runner.invoke(app, ["backends", "check"], env={"COLUMNS": "80"}, prog_name="tensorplug")
    assert r.exit_code == 2
    assert "Usage: tensorplug backends check [OPTIONS] NAME" in r.output and "{" not in r.output


# -- progress -----------------------------------------------------------------------------------------
class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_terminal_and_when_asked():
    assert _console.progress_wanted(True, _Tty()) is True
    assert _console.progress_wanted(False, _Tty()) is False
    assert _console.progress_wanted(True, io.StringIO()) is False


def test_progress_is_one_line_redrawn_in_place():
    """50 steps on a terminal: the line is redrawn (carriage returns / cursor moves), never a new
    line per step; it fits the width and ends at 50/50."""
    buf = _Tty()
    out = Console(file=buf, width=80, force_terminal=True, color_system=None)
    with commands._progress(50, True, out=out) as step:
        for i in range(50):
            with step(f"pointwise.some_op_{i}.forward[float64] with a long check id that must be cut"):
                pass
    text = buf.getvalue()
    assert text.count("\n") <= 2, text.count("\n")
    screen = ANSI.sub("", text).replace("\r", "\n")
    shown = [ln for ln in screen.splitlines() if "conformance" in ln]
    assert shown and all(len(ln.rstrip()) <= 80 for ln in shown)
    assert "50/50" in shown[-1]


def test_progress_disabled_prints_nothing():
    buf = io.StringIO()
    with commands._progress(5, False, out=Console(file=buf)) as step:
        for i in range(5):
            with step(str(i)):
                pass
    assert buf.getvalue() == ""


def test_check_without_a_terminal_or_with_no_progress_prints_no_progress_lines():
    for extra in ([], ["--no-progress"]):
        r = runner.invoke(app, ["backends", "check", "numpy", "-k", "pointwise.add.", *extra])
        assert r.exit_code == 0, r.output
        assert "conformance" not in r.output and "━" not in r.output
        assert r.output.splitlines()[0].startswith("Checking backend 'numpy'")


def test_no_arguments_prints_the_help_page():
    for args, usage in (([], "Usage: tensorplug [OPTIONS] COMMAND [ARGS]..."),
                        (["backends"], "Usage: tensorplug backends [OPTIONS] COMMAND [ARGS]...")):
        r = runner.invoke(app, args, env={"COLUMNS": "80"}, prog_name="tensorplug")
        assert r.exit_code == 2 and r.output.startswith(usage) and "Commands" in r.output


def test_output_that_is_not_a_terminal_is_not_wrapped():
    """Piped (and $COLUMNS unset): whole rows for grep, no blanks padding the line ends."""
    rows, _ = backend_rows()
    r = runner.invoke(app, ["backends", "list"], env={"COLUMNS": None})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    for row in rows:
        line = next(ln for ln in lines if ln.split()[:1] == [row["name"]])
        assert row["origin"] in line and line.split()[:3] == [row["name"], row["kind"], row["device"]]
        if not row["available"]:
            assert f"{row['name']} unavailable: {row['reason']}" in lines
    assert all(ln == ln.rstrip() for ln in lines)
    info = runner.invoke(app, ["info"], env={"COLUMNS": None}).output.splitlines()
    assert all(ln == ln.rstrip() for ln in info) and info[0].startswith("tensorplug  ")
