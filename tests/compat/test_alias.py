"""tensorplug.compat.alias: `import torch.X.Y` gives the module tensorplug.X.Y, a missing one says so,
a real torch already imported is refused, and unalias_torch() undoes it all."""
import importlib
import importlib.util
import os
import sys
import types

import pytest

import tensorplug
from tensorplug.compat import ALIASES, alias_torch, children, is_aliased, unalias_torch
from tensorplug.compat.alias import resolve


def _aliased_keys():
    return {k for k in sys.modules if k == "torch" or k.startswith("torch.")}


@pytest.fixture
def aliased(monkeypatch):
    """The alias installed for one test; everything it put in place is gone afterwards."""
    assert not _aliased_keys(), "a torch module is loaded in the test process"
    monkeypatch.delenv(children.ENV_VAR, raising=False)
    alias_torch()
    yield
    unalias_torch()
    assert not _aliased_keys() and not is_aliased()


def test_import_torch_is_tensorplug(aliased):
    """`import torch` gives the tensorplug module itself, and its submodules are tensorplug's."""
    import torch
    import torch.nn.functional as F
    assert torch is tensorplug
    assert F is importlib.import_module("tensorplug.nn.functional")
    assert torch.nn is tensorplug.nn
    assert sys.modules["torch.nn"] is tensorplug.nn
    assert sys.modules["torch.nn.functional"] is F
    x = torch.tensor([-1.0, 2.0])
    assert F.relu(x).tolist() == [0.0, 2.0]


def test_from_import(aliased):
    """`from torch.utils.data import DataLoader` is tensorplug's DataLoader."""
    from torch.utils.data import DataLoader, TensorDataset
    from tensorplug.utils import data
    assert DataLoader is data.DataLoader and TensorDataset is data.TensorDataset
    from torch import nn
    assert nn is tensorplug.nn


def test_module_identity_is_kept(aliased):
    """The aliased modules keep their own names and specs (pickles name tensorplug's paths)."""
    import torch.nn
    assert torch.nn.__name__ == "tensorplug.nn"
    assert tensorplug.__spec__.name == "tensorplug"
    assert torch.nn.__spec__.name == "tensorplug.nn"
    assert torch.nn.__spec__.origin == os.path.join(os.path.dirname(tensorplug.__file__), "nn", "__init__.py")


def test_missing_submodule_error(aliased):
    """A submodule tensorplug lacks: ModuleNotFoundError naming torch.X and tensorplug.X, name set."""
    with pytest.raises(ModuleNotFoundError) as info:
        import torch.no_such_module  # noqa: F401
    msg = str(info.value)
    assert "'torch.no_such_module'" in msg and "'tensorplug.no_such_module'" in msg
    assert "tensorplug has no" in msg
    assert info.value.name == "torch.no_such_module"
    with pytest.raises(ImportError, match="cannot import name 'no_such_module'"):
        from torch.nn import no_such_module  # noqa: F401   (as with PyTorch: a name, not a module)
    with pytest.raises(ModuleNotFoundError, match="'tensorplug.nn.nope'"):
        importlib.import_module("torch.nn.nope")
    assert "torch.no_such_module" not in sys.modules


def test_find_spec_probe_gives_none(aliased):
    """`importlib.util.find_spec('torch.X')` answers None for a missing X (an availability check),
    and a spec for one that exists, as with PyTorch installed."""
    assert importlib.util.find_spec("torch.no_such_module") is None
    assert importlib.util.find_spec("torch.nn") is not None
    assert importlib.util.find_spec("torch") is not None


def test_refuses_when_real_torch_is_imported(monkeypatch):
    """A torch module that is not tensorplug in sys.modules: RuntimeError, nothing installed."""
    fake = types.ModuleType("torch")
    fake.__file__ = "/site-packages/torch/__init__.py"
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.delenv(children.ENV_VAR, raising=False)
    with pytest.raises(RuntimeError, match=r"real 'torch' is already imported.*/site-packages/torch"):
        alias_torch()
    assert not is_aliased()
    assert children.ENV_VAR not in os.environ
    assert sys.modules["torch"] is fake


def test_twice_is_fine(aliased):
    """A second alias_torch() installs nothing more."""
    alias_torch()
    from tensorplug.compat.alias import AliasFinder
    assert sum(isinstance(f, AliasFinder) for f in sys.meta_path) == 1
    import torch
    assert torch is tensorplug


def test_unalias(monkeypatch):
    """unalias_torch(): `import torch` no longer finds tensorplug; the environment is as before."""
    monkeypatch.setenv("PYTHONPATH", "/some/where")
    monkeypatch.delenv(children.ENV_VAR, raising=False)
    alias_torch()
    import torch
    assert torch is tensorplug and is_aliased()
    assert os.environ["PYTHONPATH"] == children.SITE_DIR + os.pathsep + "/some/where"
    unalias_torch()
    assert not is_aliased() and "torch" not in sys.modules and "torch.nn" not in sys.modules
    assert os.environ["PYTHONPATH"] == "/some/where" and children.ENV_VAR not in os.environ
    spec = importlib.util.find_spec("torch")
    assert spec is None or not spec.origin.startswith(os.path.dirname(tensorplug.__file__))


def test_resolve_table():
    """The table maps a whole namespace: torch -> tensorplug, torch.X.Y -> tensorplug.X.Y, others None."""
    assert ALIASES["torch"] == "tensorplug"
    assert resolve("torch") == "tensorplug"
    assert resolve("torch.nn.functional") == "tensorplug.nn.functional"
    assert resolve("torchx") is None and resolve("numpy") is None and resolve("tensorplug") is None
