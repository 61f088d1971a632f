"""Child processes of an aliased program get the alias: multiprocessing with fork, spawn and
forkserver, DataLoader workers, subprocesses of the same Python; the start-up hook chains to another
sitecustomize, leaves sys.path clean and imports nothing until torch is imported."""
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest

from tensorplug.compat import children

TIMEOUT = 180


def _env(**extra):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop(children.ENV_VAR, None)
    return dict(env, **extra)


def exec_script(tmp_path, source, *args):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(source))
    r = subprocess.run([sys.executable, "-m", "tensorplug", "exec", str(path), *map(str, args)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=TIMEOUT, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


MP_SCRIPT = """
    import sys
    import multiprocessing as mp
    import torch

    def work(q, n):
        import torch                       # in the child: tensorplug again
        import tensorplug
        assert torch is tensorplug
        q.put(torch.arange(n, dtype=torch.float64) * 1.5)

    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1])
        q = ctx.Queue()
        p = ctx.Process(target=work, args=(q, 4))
        p.start()
        t = q.get(timeout=120)
        p.join(timeout=120)
        assert isinstance(t, torch.Tensor), type(t)
        print(sys.argv[1], p.exitcode, t.dtype, t.tolist())
"""


@pytest.mark.parametrize("method", [m for m in ("fork", "spawn", "forkserver")
                                    if m in multiprocessing.get_all_start_methods()])
def test_multiprocessing_child_imports_torch(tmp_path, method):
    """A child started with each start method imports torch (= tensorplug) and sends a tensor back;
    spawn and forkserver children re-import the script, which imports torch at the top."""
    out = exec_script(tmp_path, MP_SCRIPT, method)
    assert out.split("\n")[0] == f"{method} 0 tensorplug.float64 [0.0, 1.5, 3.0, 4.5]"


DATALOADER_SCRIPT = """
    import sys
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Squares(Dataset):
        # defined in the script: spawn workers unpickle it from the re-imported __mp_main__
        def __len__(self):
            return 10

        def __getitem__(self, i):
            info = torch.utils.data.get_worker_info()
            return torch.tensor([float(i * i)]), info.id

    if __name__ == "__main__":
        context = None if sys.argv[1] == "default" else sys.argv[1]
        loader = DataLoader(Squares(), batch_size=3, num_workers=2, multiprocessing_context=context)
        values, workers = [], set()
        for x, wid in loader:
            values += x.flatten().tolist()
            workers.update(wid.tolist())
        print(values, sorted(workers))
"""


@pytest.mark.parametrize("context", ["default", "spawn"])
def test_dataloader_workers(tmp_path, context):
    """DataLoader(num_workers=2) over a Dataset defined in the script (default context: fork here)."""
    out = exec_script(tmp_path, DATALOADER_SCRIPT, context)
    assert out.strip() == f"{[float(i * i) for i in range(10)]} [0, 1]"


def test_subprocess_of_the_same_python(tmp_path):
    """`subprocess.run([sys.executable, ...])` from the program: the child's torch is tensorplug too."""
    out = exec_script(tmp_path, """
        import subprocess, sys
        code = "import torch, tensorplug; print(torch is tensorplug, torch.ones(2).sum().item())"
        print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    """)
    assert out.strip() == "True 2.0"


def _child(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT,
                          env=_env(**env))


def test_start_up_hook(tmp_path):
    """The environment's hook: its folder leaves sys.path, tensorplug is not imported until torch is,
    then torch is tensorplug."""
    code = ("import sys, json; before = 'tensorplug' in sys.modules\n"
            "clean = not any('_site' in p for p in sys.path)\n"
            "import torch, tensorplug\nprint(json.dumps([before, clean, torch is tensorplug]))")
    r = _child(code, **{children.ENV_VAR: "torch", "PYTHONPATH": children.SITE_DIR})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [False, True, True]


def test_start_up_hook_chains_sitecustomize(tmp_path):
    """Another sitecustomize further on PYTHONPATH still runs."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITECUSTOMIZE_RAN = 41 + 1\n")
    code = ("import builtins, sys, torch, tensorplug\n"
            "print(builtins.OTHER_SITECUSTOMIZE_RAN, torch is tensorplug)")
    r = _child(code, **{children.ENV_VAR: "torch", "PYTHONPATH": children.SITE_DIR + os.pathsep + str(other)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "42 True"


def test_no_alias_without_the_variable():
    """The hook's folder on PYTHONPATH alone (no TENSORPLUG_ALIAS) installs nothing."""
    code = ("import sys; print(sum(type(f).__name__ in ('AliasFinder', '_AliasOnFirstImport') "
            "for f in sys.meta_path))")
    r = _child(code, PYTHONPATH=children.SITE_DIR)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


def test_export_withdraw_keep_pythonpath(monkeypatch):
    """export() puts the hook's folder first on PYTHONPATH once; withdraw() restores the value exactly."""
    monkeypatch.setenv("PYTHONPATH", "/a" + os.pathsep + os.pathsep + "/b")
    children.export(["torch"])
    children.export(["torch"])
    assert os.environ["PYTHONPATH"] == os.pathsep.join([children.SITE_DIR, "/a", "", "/b"])
    assert os.environ[children.ENV_VAR] == "torch"
    children.withdraw()
    assert os.environ["PYTHONPATH"] == "/a" + os.pathsep + os.pathsep + "/b"
    assert children.ENV_VAR not in os.environ
    monkeypatch.delenv("PYTHONPATH")
    children.export(["torch"])
    assert os.environ["PYTHONPATH"] == children.SITE_DIR
    children.withdraw()
    assert "PYTHONPATH" not in os.environ
