"""Weight normalisation (Salimans & Kingma, 2016): weight = g * v / ||v||.

    m = weight_norm(nn.Linear(20, 40))       # parameters weight_g (40, 1) and weight_v (40, 20)
    remove_weight_norm(m)                    # back to one `weight` Parameter

The norm is taken over every dim except `dim` (dim=None: over the whole tensor). A forward
pre-hook recomputes `weight` from g and v before every call, so gradients flow to g and v.
"""
from __future__ import annotations

from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm of v over every dim but `dim`, shaped to broadcast against v
    (dim=-1: the norm of the whole tensor, a 0-d tensor)."""
    if dim == -1:
        return v.norm(pow)
    ndim = v.ndim
    if dim < 0:
        dim += ndim
    axes = [d for d in range(ndim) if d != dim]
    if not axes:
        return v.abs()           # the norm over no dims: each element's absolute value
    return v.norm(pow, dim=axes, keepdim=True)


def _weight_norm(v, g, dim=0):
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes `module.<name>` from `<name>_g` and `<name>_v`."""

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure "
                             "to run the dummy forward before applying weight normalization")
        if not isinstance(weight, Parameter):
            raise TypeError(f"weight_norm: '{name}' of {type(module).__name__} is not a Parameter")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrise `module.<name>` as g * v / ||v|| (g: `<name>_g`, v: `<name>_v`); returns module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: `module.<name>` becomes one Parameter again (its current value)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
