"""Helpers the model builders share: the legacy `pretrained=` interface, positional arguments to
keyword-only builders, parameter overrides implied by weights, channel rounding."""
import functools
import inspect
import warnings
from typing import Any, Callable

from ._api import WeightsEnum


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """v rounded to the nearest multiple of divisor, never below min_value nor 10% below v."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def kwonly_to_pos_or_kw(fn: Callable) -> Callable:
    """Let a builder with keyword-only parameters still take them positionally (with a warning)."""
    params = inspect.signature(fn).parameters
    try:
        first = next(i for i, p in enumerate(params.values()) if p.kind == p.KEYWORD_ONLY)
    except StopIteration:
        raise TypeError(f"Found no keyword-only parameter on function '{fn.__name__}'") from None
    kwonly = tuple(params)[first:]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args, extra = args[:first], args[first:]
        if extra:
            named = dict(zip(kwonly, extra))
            listing = ", ".join(f"{k}={v}" for k, v in named.items())
            warnings.warn(f"Using {sequence_to_str(tuple(named), separate_last='and ')} as positional "
                          f"parameter(s) is deprecated since 0.13 and may be removed in the future. Please "
                          f"use keyword parameter(s) instead ({listing}).")
            kwargs.update(named)
        return fn(*args, **kwargs)
    return wrapper


def sequence_to_str(seq, separate_last: str = "") -> str:
    if not seq:
        return ""
    if len(seq) == 1:
        return f"'{seq[0]}'"
    head = "'" + "', '".join(str(x) for x in seq[:-1]) + "'"
    tail = f"{'' if separate_last and len(seq) == 2 else ','} {separate_last}'{seq[-1]}'"
    return head + tail


def handle_legacy_interface(**weights: tuple[str, Any]):
    """Decorator mapping `pretrained=True` (or a positional True) onto `weights=<default enum>`:
    `weights=(pretrained_param_name, default_enum_or_callable_of_kwargs)` per weights parameter."""

    def outer(builder):
        @kwonly_to_pos_or_kw
        @functools.wraps(builder)
        def inner(*args, **kwargs):
            for weights_param, (pretrained_param, default) in weights.items():
                sentinel = object()
                weights_arg = kwargs.get(weights_param, sentinel)
                if ((weights_param not in kwargs and pretrained_param not in kwargs)
                        or isinstance(weights_arg, WeightsEnum)
                        or (isinstance(weights_arg, str) and weights_arg != "legacy")
                        or weights_arg is None):
                    continue
                positional = weights_arg is not sentinel
                if positional:      # weights=True / False given where pretrained was meant
                    kwargs[pretrained_param] = pretrained_arg = kwargs.pop(weights_param)
                else:
                    pretrained_arg = kwargs[pretrained_param]
                if pretrained_arg:
                    default_arg = default(kwargs) if callable(default) else default
                    if not isinstance(default_arg, WeightsEnum):
                        raise ValueError(f"No weights available for model {builder.__name__}")
                else:
                    default_arg = None
                if not positional:
                    warnings.warn(f"The parameter '{pretrained_param}' is deprecated since 0.13 and may be "
                                  f"removed in the future, please use '{weights_param}' instead.")
                msg = (f"Arguments other than a weight enum or `None` for '{weights_param}' are deprecated "
                       f"since 0.13 and may be removed in the future. The current behavior is equivalent "
                       f"to passing `{weights_param}={default_arg}`.")
                if pretrained_arg:
                    msg += (f" You can also use `{weights_param}={type(default_arg).__name__}.DEFAULT` "
                            f"to get the most up-to-date weights.")
                warnings.warn(msg)
                del kwargs[pretrained_param]
                kwargs[weights_param] = default_arg
            return builder(*args, **kwargs)
        return inner
    return outer


def _ovewrite_named_param(kwargs: dict, param: str, new_value: Any) -> None:
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(f"The parameter '{param}' expected value {new_value} but got "
                             f"{kwargs[param]} instead.")
    else:
        kwargs[param] = new_value


def _load_weights(model, weights: WeightsEnum, progress: bool) -> None:
    model.load_state_dict(_with_bn_counters(model, weights.get_state_dict(progress=progress, check_hash=True)))


def _with_bn_counters(model, state_dict: dict) -> dict:
    """Checkpoints saved before batch norm had `num_batches_tracked` lack it; PyTorch fills it in for
    such (unversioned) state dicts, so add the model's current counters where they are missing."""
    own = model.state_dict()
    for key in own:
        if key.endswith("num_batches_tracked") and key not in state_dict:
            state_dict[key] = own[key]
    return state_dict
