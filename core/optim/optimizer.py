"""The Optimizer base class: parameter groups, per-parameter state, state dicts, hooks.

    opt = tensorplug.optim.SGD([{"params": model.base.parameters()},
                                {"params": model.head.parameters(), "lr": 1e-3}],
                               lr=1e-2, momentum=0.9)
    opt.zero_grad(); loss.backward(); opt.step()

Subclasses implement `step(closure=None)`. The built-in optimizers update parameters in place
through their backend's kernels with `out=` (no new parameter tensors, no autograd history);
every write bumps the written tensor's version counter. State dicts have PyTorch's layout:
`{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}`.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from ..dispatch.optional_optim import lerp_ as _lerp_  # noqa: F401  (the optimizers import it from here)
from .. import dtypes as _dt
from ..autograd import grad_mode
from ..tensor import Tensor, _make

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_gstate = grad_mode.state


class _RequiredParameter:
    """Marks a hyper-parameter without a default: every param group must give it."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class RemovableHandle:
    """Returned by the hook registration methods; `remove()` unregisters the hook."""
    _next_id = 0

    def __init__(self, hooks_dict):
        import weakref
        self._ref = weakref.ref(hooks_dict) if _weakrefable(hooks_dict) else (lambda: hooks_dict)
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        d = self._ref()
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _weakrefable(obj):
    import weakref
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs) -> None, after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _hooked_step(fn):
    """Wrap a subclass's `step`: note that it ran (for the LR schedulers' ordering warning) and
    run step hooks, when any are registered."""
    @functools.wraps(fn)
    def step(self, *args, **kwargs):
        self._opt_called = True
        if self._in_hooked_step or not (self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks
                                         or _global_optimizer_pre_hooks or _global_optimizer_post_hooks):
            return fn(self, *args, **kwargs)
        self._in_hooked_step = True
        try:
            for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{fn} must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
            out = fn(self, *args, **kwargs)
            for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        finally:
            self._in_hooked_step = False
    step._optim_hooked = True
    return step


def _no_grad_step(fn):
    """Run an optimizer's step with grad mode off (the closure turns it back on)."""
    @functools.wraps(fn)
    def step(self, *args, **kwargs):
        prev = _gstate.enabled
        _gstate.enabled = False
        try:
            return fn(self, *args, **kwargs)
        finally:
            _gstate.enabled = prev
    return step


def _call_closure(closure):
    """The closure's loss, computed with grad mode on."""
    prev = _gstate.enabled
    _gstate.enabled = True
    try:
        return closure()
    finally:
        _gstate.enabled = prev


def _typename(x):
    if isinstance(x, Tensor):
        return f"tensorplug.{type(x).__name__}"
    return type(x).__module__ + "." + type(x).__qualname__ if type(x).__module__ != "builtins" \
        else type(x).__qualname__


class Optimizer:
    """Base class of optimizers.

    params: an iterable of tensors, of (name, tensor) pairs, or of dicts (parameter groups, each
    with a "params" entry and optional per-group options). defaults: the options' default values."""

    _in_hooked_step = False
    _opt_called = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and callable(step) and not getattr(step, "_optim_hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            "dicts, but got " + _typename(params))
        if isinstance(params, dict):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            "dicts, but got a dict (wrap a single parameter group in a list)")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # -- pickling / copying ------------------------------------------------------------------
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # -- groups --------------------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a parameter group (a dict with "params" and optional options) to `param_groups`."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.grad_fn is None or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients -----------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True):
        """Reset the gradients of all optimized tensors: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if g.grad_fn is not None:
                            g.detach_()
                        else:
                            g._rg = False
                        g._k["assign"](g._data, 0)
                        g._bump_version()

    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss (or None)."""
        raise NotImplementedError

    # -- hooks ---------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before each step."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, after each step."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def _register(self, table, hook, prepend):
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend: bool = False):
        """hook(optimizer) -> None, before state_dict()."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False):
        """hook(optimizer, state_dict) -> state_dict or None, after state_dict()."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False):
        """hook(optimizer, state_dict) -> state_dict or None, before load_state_dict()."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False):
        """hook(optimizer) -> None, after load_state_dict()."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dicts ---------------------------------------------------------------------------
    def state_dict(self):
        """The optimizer's state as a dict: "state" maps parameter indices (their order across the
        groups) to per-parameter state, "param_groups" lists the groups' options with "params" as
        index lists. The per-parameter state is not copied (save it, or deepcopy it, to keep it)."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start_index):
                if id(p) not in param_mappings:
                    param_mappings[id(p)] = i
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        """A loaded state tensor as a copy of its own, on param's device and (floating point state
        other than "step") in param's dtype."""
        if key == "step":
            out = value
        elif param.is_floating_point() and value.is_floating_point():
            out = value.to(dtype=param.dtype, device=param.device)
        else:
            out = value.to(device=param.device)
        if out is value or out._data is value._data:
            out = _make(value._k["copy"](value._data), value._dtype, value._k, value._dev)
            if key != "step":
                out = out.to(device=param.device)
        if out._rg or out.grad_fn is not None:
            out = out.detach()
        return out

    def load_state_dict(self, state_dict):
        """Load a state dict from `state_dict()` (of an optimizer with the same groups and sizes).
        Tensors are copied onto each parameter's device (floating state in its dtype)."""
        state_dict = dict(state_dict)
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, state_dict["param_groups"], key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(_cast(param, v, param_id=param_id) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- helpers for subclasses ----------------------------------------------------------------
    def _steps_to_tensors(self):
        """Loaded "step" entries that are plain numbers become 0-d step tensors."""
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state.get(p)
                if s and "step" in s and not isinstance(s["step"], Tensor):
                    s["step"] = _step_tensor(float(s["step"]))


class _ParamwiseOptimizer(Optimizer):
    """The step loop shared by the built-in element-wise optimizers (SGD, Adam, AdamW, RMSprop,
    Adagrad, Adadelta, Adamax). A subclass gives only what differs:

    _setstate_defaults: options an older pickle or state dict may lack (set in __setstate__).
    _step_state: whether per-parameter state holds a "step" tensor (loaded numbers become tensors).
    _lazy_state: whether a parameter's state ("step" and zero-filled buffers) is made on its first
        step and the step count incremented before each update; False: the update manages its own
        state, if any.
    _init_key: None: a parameter's state is made when empty; a key: when that key is missing.
    _state_buffers(group): names of the zero-filled buffers made (after "step") with a parameter's state.
    _grad_weight_decay(group): the L2 penalty folded into the gradient (default: "weight_decay").
    _group_update(group): a function update(p, gd, owned, st, step) for one parameter, with the
        group's hyper-parameters bound; gd is the prepared gradient array (-grad when maximizing,
        plus the L2 penalty; owned: a temporary it may overwrite), st the parameter's state and step
        the incremented step count (a float); both None without lazily made state.
    """

    _setstate_defaults: dict = {}
    _step_state = True
    _lazy_state = True
    _init_key = None

    def __setstate__(self, state):
        super().__setstate__(state)
        defaults = self._setstate_defaults
        for group in self.param_groups:
            for key, value in defaults.items():
                group.setdefault(key, value)
        if self._step_state:
            self._steps_to_tensors()

    def _state_buffers(self, group):
        return ()

    def _init_state(self, p, group):
        """A parameter's state on its first step: a zero step tensor and zero-filled buffers."""
        st = self.state[p]
        st["step"] = _step_tensor()
        for name in self._state_buffers(group):
            st[name] = _zeros_like(p)
        return st

    def _grad_weight_decay(self, group):
        return group["weight_decay"]

    def _group_update(self, group):
        raise NotImplementedError

    @_no_grad_step
    def step(self, closure=None):
        """One optimization step; returns the closure's loss when a closure is given."""
        loss = None
        if closure is not None:
            loss = _call_closure(closure)
        state = self.state
        init_key = self._init_key
        stateful = self._lazy_state
        for group in self.param_groups:
            update = self._group_update(group)
            maximize = group["maximize"]
            weight_decay = self._grad_weight_decay(group)
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if stateful:
                    st = state[p]
                    if (not st) if init_key is None else (init_key not in st):
                        st = self._init_state(p, group)
                    step = _inc_step(st["step"])
                else:
                    st = step = None
                gd, owned = _prep_grad(p._k, p, g, maximize, weight_decay)
                update(p, gd, owned, st, step)
        return loss


# -- kernel-level helpers shared by the optimizers ------------------------------------------------
def _scalar_dtype():
    return _dt.float64 if _dt.get_default_dtype() is _dt.float64 else _dt.float32


def _step_tensor(value=0.0):
    """A 0-d CPU tensor holding a step count (PyTorch keeps `state["step"]` this way)."""
    from ..ops.creation import tensor
    return tensor(float(value), dtype=_scalar_dtype(), device="cpu")


def _inc_step(st):
    """step += 1 in place; returns the new value as a Python float."""
    k = st._k
    d = st._data
    k["add"](d, 1.0, out=d)
    v = st._ver
    if v is None:
        st._ver = [1]
    else:
        v[0] += 1
    return float(k["to_numpy"](d))


def _zeros_like(p, value=0):
    """A new plain tensor shaped like p, filled with value."""
    return _make(p._k["full"](p._data.shape, value, p._dtype.name), p._dtype, p._k, p._dev)


def _bump(t):
    v = t._ver
    if v is None:
        t._ver = [1]
    else:
        v[0] += 1


def _grad_data(p, g):
    """g's array as an operand for updating p (same device, p's dtype and shape)."""
    if g._k is not p._k:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{p._dev} and {g._dev}! (parameter and its gradient)")
    gd = g._data
    if g._dtype is not p._dtype:
        gd = p._k["astype"](gd, p._dtype.name)
    if gd.shape != p._data.shape:
        raise RuntimeError(f"the gradient's shape {list(gd.shape)} doesn't match the parameter's shape "
                           f"{list(p._data.shape)}")
    return gd


def _prep_grad(k, p, g, maximize, weight_decay):
    """The update direction's gradient: -g when maximizing, plus weight_decay * p (L2 penalty).
    Returns (array, owned): owned arrays are temporaries the caller may overwrite."""
    gd = _grad_data(p, g)
    owned = gd is not g._data
    if maximize:
        gd = k["neg"](gd, out=gd) if owned else k["neg"](gd)
        owned = True
    if weight_decay != 0:
        t = k["mul"](p._data, weight_decay)
        k["add"](gd, t, out=t)
        gd, owned = t, True
    return gd, owned


def _to_scalar(x):
    """A hyper-parameter as a Python number (1-element tensors are read)."""
    if isinstance(x, Tensor):
        return x.item()
    return x


def _check_differentiable(differentiable, fused=None):
    """`differentiable=True` (an optimizer step recorded for autograd) is not implemented;
    `foreach`, `fused` and `capturable` are accepted for compatibility and change nothing."""
    if differentiable:
        raise NotImplementedError("differentiable=True (recording the optimizer step for autograd) is not "
                                  "supported by tensorplug optimizers")


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


_ARG_LABELS = {"eps": "epsilon"}


def _check_args(differentiable=False, fused=None, **args):
    """Validate constructor arguments in the order given: lr (a number or 1-element tensor, >= 0),
    betas (each in [0, 1)), rho (in [0, 1]), any other: >= 0; then `differentiable`."""
    for name, value in args.items():
        if name == "lr":
            _check_lr(value)
        elif name == "betas":
            for i in (0, 1):
                if not 0.0 <= value[i] < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {i}: {value[i]}")
        elif name == "rho":
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Invalid rho value: {value}")
        elif not 0.0 <= value:
            raise ValueError(f"Invalid {_ARG_LABELS.get(name, name)} value: {value}")
    _check_differentiable(differentiable, fused)
