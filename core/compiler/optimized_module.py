"""OptimizedModule: what compile returns for a Module. The original is its child `_orig_mod` (so its
state_dict keys carry the `_orig_mod.` prefix, as PyTorch's do); attributes it lacks are the
original's; calling it runs the compiled forward."""
from __future__ import annotations

from ..nn.modules.module import Module


class OptimizedModule(Module):
    def __init__(self, mod, compiled, disable=False):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "_compile_disabled", disable)

    def __call__(self, *args, **kwargs):
        if self._compile_disabled or self._orig_mod._forward_hooks or self._orig_mod._forward_pre_hooks:
            return self._orig_mod(*args, **kwargs)
        return self._compiled(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)
