"""`tensorplug exec SCRIPT ARGS` / `-m MODULE`: the program runs as under python (argv, __main__,
__file__, sys.path[0], exit status, tracebacks, stdin, pickling of __main__ classes), with torch being
tensorplug; a missing script or module is a usage error."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tensorplug.cli.app import app
from tensorplug.compat import children

TIMEOUT = 120


def _env():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop(children.ENV_VAR, None)
    return env


def run(cwd, *args, input=None, command=None):
    cmd = command or [sys.executable, "-m", "tensorplug", "exec"]
    return subprocess.run([*cmd, *map(str, args)], cwd=cwd, capture_output=True, text=True, input=input,
                          timeout=TIMEOUT, env=_env())


def script(path, source):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


REPORT = """
    import json, os, sys
    import torch
    import tensorplug
    print(json.dumps({"argv": sys.argv, "file": __file__, "name": __name__, "path0": sys.path[0],
                      "spec": __spec__ and (__spec__.name, __spec__.origin), "package": __package__, "cached": __cached__,
                      "torch": torch is tensorplug, "cwd": os.getcwd()}))
"""


def report(result):
    import json
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_argv_file_name_path(tmp_path):
    """sys.argv is [SCRIPT, *ARGS] with option-like arguments untouched; __file__ absolute; __name__
    '__main__'; sys.path[0] the script's folder; __spec__/__package__/__cached__ None; torch is tensorplug."""
    script(tmp_path / "sub" / "prog.py", REPORT)
    args = ["--batch_size=4", "-h", "--help", "-m", "x", "--", "last arg"]
    r = report(run(tmp_path, "sub/prog.py", *args))
    assert r["argv"] == ["sub/prog.py", *args]
    assert r["file"] == str(tmp_path / "sub" / "prog.py")
    assert r["name"] == "__main__"
    assert r["path0"] == str((tmp_path / "sub").resolve())
    assert (r["spec"], r["package"], r["cached"]) == (None, None, None)
    assert r["torch"] is True
    assert r["cwd"] == str(tmp_path)


def test_same_as_python(tmp_path):
    """Everything but torch is what `python SCRIPT ARGS` reports (a symlinked script too)."""
    prog = script(tmp_path / "real" / "prog.py", REPORT.replace("import torch\n", "torch = None\n"))
    os.symlink(prog, tmp_path / "link.py")
    for target in ("real/prog.py", "link.py"):
        under_python = report(subprocess.run([sys.executable, target, "a", "--b"], cwd=tmp_path,
                                             capture_output=True, text=True, timeout=TIMEOUT, env=_env()))
        assert report(run(tmp_path, target, "a", "--b")) == under_python


def test_console_script(tmp_path):
    """The `tensorplug` command installed next to this Python does the same as python -m tensorplug."""
    exe = Path(sys.executable).with_name("tensorplug")
    if not exe.exists():
        pytest.skip("no tensorplug console script next to this Python")
    script(tmp_path / "prog.py", REPORT)
    r = report(run(tmp_path, "prog.py", "-x", command=[str(exe), "exec"]))
    assert r["argv"] == ["prog.py", "-x"] and r["path0"] == str(tmp_path.resolve()) and r["torch"]


@pytest.mark.parametrize("code, expected", [("sys.exit(0)", 0), ("sys.exit(7)", 7), ("pass", 0),
                                            ("sys.exit(None)", 0), ("raise SystemExit(3)", 3)])
def test_exit_codes(tmp_path, code, expected):
    """The program's SystemExit code is the process's."""
    script(tmp_path / "p.py", f"import sys\n{code}\n")
    assert run(tmp_path, "p.py").returncode == expected


def test_exit_with_message(tmp_path):
    """sys.exit('message'): the message on stderr, status 1, as python."""
    script(tmp_path / "p.py", "import sys\nsys.exit('giving up: no data')\n")
    r = run(tmp_path, "p.py")
    assert r.returncode == 1 and r.stderr.strip() == "giving up: no data"


def test_uncaught_exception_traceback(tmp_path):
    """An uncaught exception: status 1 and python's traceback, with none of exec's own frames."""
    script(tmp_path / "p.py", """
        def inner():
            raise ValueError("bad value 42")

        inner()
    """)
    r = run(tmp_path, "p.py")
    assert r.returncode == 1 and r.stdout == ""
    py = subprocess.run([sys.executable, "p.py"], cwd=tmp_path, capture_output=True, text=True,
                        timeout=TIMEOUT, env=_env())
    assert r.stderr == py.stderr
    assert r.stderr.startswith("Traceback (most recent call last):\n")
    assert r.stderr.strip().endswith("ValueError: bad value 42")
    for frame in ("program.py", "exec.py", "typer", "tensorplug"):
        assert frame not in r.stderr


def test_syntax_error(tmp_path):
    """A script that does not compile: python's SyntaxError report, status 1."""
    script(tmp_path / "p.py", "x = (1,\n")
    r = run(tmp_path, "p.py")
    assert r.returncode == 1
    assert "SyntaxError" in r.stderr and "p.py" in r.stderr and "program.py" not in r.stderr


def test_excepthook_of_the_program(tmp_path):
    """An uncaught exception goes to the program's sys.excepthook, as under python."""
    script(tmp_path / "p.py", """
        import sys
        sys.excepthook = lambda t, v, tb: print("hook saw", t.__name__, v, tb.tb_frame.f_code.co_name)
        raise KeyError("k")
    """)
    r = run(tmp_path, "p.py")
    assert r.returncode == 1 and r.stdout.strip() == "hook saw KeyError 'k' <module>"


def test_keyboard_interrupt(tmp_path):
    """An uncaught KeyboardInterrupt: a traceback and status 130 (how a shell reports SIGINT)."""
    script(tmp_path / "p.py", "raise KeyboardInterrupt\n")
    r = run(tmp_path, "p.py")
    assert r.returncode == 130 and r.stderr.strip().endswith("KeyboardInterrupt")
    assert "Aborted" not in r.stderr


def test_stdin_stdout_untouched(tmp_path):
    """The program reads the process's stdin and writes its stdout."""
    script(tmp_path / "p.py", "import sys\nprint(sys.stdin.read().upper(), end='')\n")
    r = run(tmp_path, "p.py", input="line one\nline two\n")
    assert r.returncode == 0 and r.stdout == "LINE ONE\nLINE TWO\n"


def test_pickle_main_class(tmp_path):
    """Classes and functions defined in the script pickle as __main__ names and load back."""
    script(tmp_path / "p.py", """
        import pickle, sys
        import torch

        class Point:
            def __init__(self, x, y):
                self.x, self.y = x, y

        def double(v):
            return 2 * v

        data = pickle.dumps((Point(1, torch.tensor([2.5, 3.0])), double))
        assert b"__main__" in data and b"Point" in data
        p, f = pickle.loads(data)
        assert type(p) is Point and f is double and sys.modules["__main__"].Point is Point
        print(p.x, p.y.tolist(), f(21))
    """)
    r = run(tmp_path, "p.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1 [2.5, 3.0] 42"


def test_missing_script(tmp_path):
    """No such script: a one-line error and status 2."""
    r = run(tmp_path, "nope.py", "--flag")
    assert r.returncode == 2
    assert "nope.py" in r.stderr and "Traceback" not in r.stderr


def test_module(tmp_path):
    """-m MODULE: python -m's argv[0] (the file), sys.path[0] (the working folder), __spec__, package
    __main__; a missing module is status 2."""
    script(tmp_path / "pkg" / "__init__.py", "")
    script(tmp_path / "pkg" / "tool.py", REPORT)
    script(tmp_path / "pkg" / "__main__.py", REPORT)
    r = report(run(tmp_path, "-m", "pkg.tool", "--lr", "0.1"))
    assert r["argv"] == [str(tmp_path / "pkg" / "tool.py"), "--lr", "0.1"]
    assert r["path0"] == str(tmp_path) and r["name"] == "__main__" and r["package"] == "pkg"
    assert r["spec"] == ["pkg.tool", str(tmp_path / "pkg" / "tool.py")] and r["torch"]
    script(tmp_path / "pkg" / "plain.py", REPORT.replace("import torch\n", "torch = None\n"))
    under_python = report(subprocess.run([sys.executable, "-m", "pkg.plain", "-v"], cwd=tmp_path,
                                         capture_output=True, text=True, timeout=TIMEOUT, env=_env()))
    assert report(run(tmp_path, "-m", "pkg.plain", "-v")) == under_python
    r = report(run(tmp_path, "-m", "pkg"))
    assert r["argv"] == [str(tmp_path / "pkg" / "__main__.py")] and r["spec"][0] == "pkg.__main__"
    bad = run(tmp_path, "-m", "no_such_mod")
    assert bad.returncode == 2 and "No module named no_such_mod" in bad.stderr
    script(tmp_path / "lib" / "__init__.py", "")
    bad = run(tmp_path, "-m", "lib")
    assert bad.returncode == 2 and "'lib' is a package and cannot be directly executed" in bad.stderr


def test_module_under_torch_name(tmp_path):
    """-m torch.X runs tensorplug's X (python -m torch.distributed.run style)."""
    r = run(tmp_path, "-m", "torch", "--help")
    assert r.returncode == 0, r.stderr
    assert "Usage: tensorplug" in r.stdout


def test_folder_and_zip_with_main(tmp_path):
    """A folder or zip file with __main__.py runs as `python FOLDER` runs it."""
    import zipfile
    source = REPORT.replace("import torch\n", "torch = None\n")
    script(tmp_path / "app" / "__main__.py", source)
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as z:
        z.writestr("__main__.py", textwrap.dedent(source))
    for target in ("app", "app.zip"):
        under_python = report(subprocess.run([sys.executable, target, "z"], cwd=tmp_path,
                                             capture_output=True, text=True, timeout=TIMEOUT, env=_env()))
        r = report(run(tmp_path, target, "z"))
        assert r == under_python and r["path0"] == str(tmp_path / target) and r["argv"] == [target, "z"]


def test_missing_torch_module_message(tmp_path):
    """`import torch.X` of a module tensorplug lacks: the traceback names both, status 1."""
    script(tmp_path / "p.py", "import torch.no_such_feature\n")
    r = run(tmp_path, "p.py")
    assert r.returncode == 1
    assert "No module named 'torch.no_such_feature'" in r.stderr
    assert "tensorplug has no 'tensorplug.no_such_feature'" in r.stderr


def test_real_torch_already_imported(tmp_path):
    """A torch imported before exec starts the program (here a planted module): status 2, a message."""
    script(tmp_path / "p.py", "print('ran')\n")
    code = ("import sys, types; sys.modules['torch'] = types.ModuleType('torch'); "
            "from tensorplug.cli import main; sys.argv = ['tensorplug', 'exec', 'p.py']; main()")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       timeout=TIMEOUT, env=_env())
    assert r.returncode == 2 and "ran" not in r.stdout
    assert "already imported" in r.stderr


def test_help():
    """`tensorplug exec --help` explains the command on one screen."""
    r = CliRunner().invoke(app, ["exec", "--help"], env={"COLUMNS": "100"})
    assert r.exit_code == 0
    assert "Run a PyTorch program unchanged on tensorplug" in r.output
    assert "import torch" in r.output and "-m" in r.output and "Exit status" in r.output
    assert len(r.output.splitlines()) <= 40


def test_nothing_named_torch_on_disk():
    """No file or folder named torch* ships in tensorplug: the alias exists only inside an aliased program."""
    import tensorplug.backends
    import tensorplug.cli
    roots = {Path(p) for m in (tensorplug, tensorplug.backends, tensorplug.cli) for p in m.__path__}
    assert [p for r in roots for p in r.rglob("torch*") if "__pycache__" not in p.parts] == []
