"""`torch.amp.GradScaler`: dynamic loss scaling, so that small gradients of low-precision forward
passes do not underflow.

    scaler = tensorplug.amp.GradScaler("cpu")
    for x, y in data:
        opt.zero_grad()
        with tensorplug.autocast("cpu", dtype=tensorplug.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()       # gradients of loss * scale
        scaler.step(opt)                    # unscales, skips opt.step() when a gradient is inf/NaN
        scaler.update()                     # backs off after a skip, grows after clean intervals

The scale and the growth tracker are 0-d tensors on the device of the first scaled output, and the
inf/NaN checks stay on the device until `step` decides (one host read per step, as PyTorch).
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

from .. import dtypes as _dt

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDevice:
    """One master tensor and its copies on the other devices it is asked for."""

    def __init__(self, master):
        self.master = master
        self.per_device = {master.device: master}

    def get(self, device):
        t = self.per_device.get(device)
        if t is None:
            t = self.per_device[device] = self.master.to(device=device)
        return t


def _needs_backend(device) -> bool:
    """Whether `device` is a device type autocast knows only with a backend (CUDA), and none serves it."""
    from .autocast_mode import _usable
    from .op_lists import PROFILES
    p = PROFILES.get(device)
    return p is not None and p.unavailable is not None and not _usable(device)[0]


class GradScaler:
    """Scale losses by `init_scale` (a power of two by default); `update` multiplies the scale by
    `backoff_factor` after a step with inf/NaN gradients (that step is skipped) and by
    `growth_factor` after `growth_interval` clean steps in a row. `enabled=False` makes every method
    a pass-through."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and _needs_backend(device):
            warnings.warn(f"torch.{device}.amp.GradScaler is enabled, but {device.upper()} is not available.  "
                          f"Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None                 # made on the device of the first scaled output
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- the scale ------------------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        from ..ops.creation import full
        self._scale = full((), self._init_scale, dtype=_dt.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dt.int32, device=dev)

    def scale(self, outputs):
        """outputs (a tensor, or nested lists/tuples/iterables of tensors) times the scale."""
        if not self._enabled:
            return outputs
        from ..tensor import Tensor
        replicas = []

        def apply(val):
            if isinstance(val, Tensor):
                if not replicas:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    replicas.append(_PerDevice(self._scale))
                return val * replicas[0].get(val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(apply(v) for v in val)
            if hasattr(val, "__iter__") and not isinstance(val, (str, bytes)):
                return map(apply, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    # -- unscaling and the inf/NaN check ----------------------------------------------------------------
    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """grad *= inv_scale for every gradient of `optimizer`; returns {device: found_inf} (1.0 where
        a gradient on that device has an inf or NaN)."""
        from ..autograd.grad_mode import no_grad
        from ..ops.pointwise import isfinite, maximum
        inv = _PerDevice(inv_scale)
        found = {}
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    g = param.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is _dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    dev = g.device
                    bad = (~isfinite(g)).any().to(_dt.float32)
                    f = found.get(dev)
                    found[dev] = maximum(f, bad) if f is not None else maximum(found_inf.to(device=dev), bad)
                    g.mul_(inv.get(dev))
        return found

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of `optimizer`'s parameters by the scale (in place), once per step;
        `step` then does not unscale again (call this to clip gradients before stepping)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, as PyTorch (a float32 one can be off for some compile options)
        inv_scale = self._scale.double().reciprocal().float()
        from ..ops.creation import zeros
        found_inf = zeros((), dtype=_dt.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless `unscale_` ran this iteration), then `optimizer.step(*args, **kwargs)` unless
        a gradient was inf/NaN. Returns what `optimizer.step` returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    # -- the update ----------------------------------------------------------------------------------
    def update(self, new_scale=None) -> None:
        """Back off (a step was skipped) or grow (growth_interval clean steps) the scale; or set it to
        `new_scale` (a float, or a 1-element tensor on the scaler's device type without grad)."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f.to(device=scale.device) for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            self._update_scale(scale, tracker, combined)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, scale, tracker, found_inf):
        """The scale rule, on the device (no host read): found inf -> scale * backoff, tracker 0;
        else tracker + 1, and on reaching growth_interval scale * growth (if finite), tracker 0.
        Products in float64, rounded to float32 once (PyTorch's kernel does the same)."""
        from ..autograd.grad_mode import no_grad
        from ..ops.pointwise import isfinite, where
        with no_grad():
            found = found_inf > 0
            s = scale.double()
            grown = s * self._growth_factor
            successful = tracker + 1
            due = successful == self._growth_interval
            grow = (~found) & due & isfinite(grown.float())
            reset = found | due
            new = where(found, s * self._backoff_factor, where(grow, grown, s))
            scale.copy_(new.float())
            tracker.copy_(where(reset, 0, successful).to(tracker.dtype))

    # -- accessors -----------------------------------------------------------------------------------
    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} (PyTorch's
        keys; empty when disabled). Take it after `update`."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            # the tensors are remade lazily by the unpickled instance
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer):
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        from ..ops.creation import ones, zeros
        dummy_inv_scale = ones((), dtype=_dt.float32, device=scale.device)
        found_inf = zeros((), dtype=_dt.float32, device=scale.device)
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)
        return state["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
