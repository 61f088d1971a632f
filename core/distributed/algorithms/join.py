"""Join: training on uneven inputs (ranks with different numbers of batches) without hanging.

    with Join([ddp_model]):                      # or: with ddp_model.join():
        for x, y in my_batches:                  # rank 1 may have fewer than rank 0
            loss_fn(ddp_model(x), y).backward()
            opt.step()

A rank that leaves the loop has "joined": in `__exit__` it keeps answering the collectives of the
ranks still training (each Joinable's `JoinHook.main_hook` shadows one iteration of them), until
every rank has joined; then each hook's `post_hook(is_last_joiner)` runs (DDP: every rank takes the
model of the last rank to join). A rank still training says so once per iteration, with
`Join.notify_join_context(joinable)` (one all-reduce of a 1, which joined ranks answer with a 0:
the sum is the number of ranks still training).
"""
from __future__ import annotations

import abc
from typing import NamedTuple

__all__ = ["Join", "Joinable", "JoinHook"]


class JoinHook:
    """What a Joinable does once it has joined: `main_hook()` runs once per iteration of the ranks
    still training (issuing the collectives they issue), `post_hook(is_last_joiner)` once at the end."""

    def main_hook(self) -> None:
        pass

    def post_hook(self, is_last_joiner: bool) -> None:
        pass


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def disabled():
        return _JoinConfig(False, False, False)


class Joinable(abc.ABC):
    """A class that can take part in a Join: it provides `join_hook(**kwargs)`, and the
    `join_device` and `join_process_group` of its collectives. Any class with those three counts
    as a Joinable (isinstance) without inheriting from it; it then holds `_join_config` itself."""

    @abc.abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.disabled()

    @abc.abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        ...

    @property
    @abc.abstractmethod
    def join_device(self):
        ...

    @property
    @abc.abstractmethod
    def join_process_group(self):
        ...

    @classmethod
    def __subclasshook__(cls, C):
        if cls is Joinable:
            names = ("join_hook", "join_device", "join_process_group")
            return all(any(n in B.__dict__ for B in C.__mro__) for n in names) or NotImplemented
        return NotImplemented


def _dist():
    import tensorplug.distributed as dist
    return dist


def _one(value):
    from tensorplug.ops.creation import tensor
    return tensor([value], dtype=_int64())


def _int64():
    from tensorplug import dtypes
    return dtypes.int64


class Join:
    """Context manager for uneven inputs (see the module docstring). `joinables`: the Joinables
    used in the loop (all on one process group); `enable=False` makes it do nothing;
    `throw_on_early_termination=True`: as soon as one rank joins, every rank raises instead of
    shadowing. Extra keyword arguments go to every `join_hook`."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        joinables = list(joinables)
        if not joinables:
            raise ValueError("The join context manager requires at least one joinable")
        for j in joinables:
            if not isinstance(j, Joinable):
                raise TypeError(f"Join needs Joinables (join_hook, join_device, join_process_group), got "
                                f"{type(j).__name__}")
        self._joinables = joinables
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for i, j in enumerate(joinables):
            j._join_config = _JoinConfig(enable, throw_on_early_termination, i == 0)
        groups = {id(j.join_process_group) for j in joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = joinables[0].join_process_group
        self._join_hooks = [j.join_hook(**kwargs) for j in joinables]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if not self._enable or exc_type is not None:
                return None          # an exception in the loop goes up as it is
            is_last_joiner = True
            while self._count_training() > 0:
                if self._throw_on_early_termination:
                    self._tell_others_to_stop()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
        finally:
            for j in self._joinables:
                j._join_config = _JoinConfig.disabled()
        return None

    def _count_training(self) -> int:
        """Answer one notify_join_context of the ranks still training: how many there are."""
        t = _one(0)
        _dist().all_reduce(t, group=self._process_group)
        return int(t.item())

    def _tell_others_to_stop(self):
        t = _one(1)
        _dist().all_reduce(t, group=self._process_group)
        rank = _dist().get_rank(self._process_group)
        raise RuntimeError(f"Rank {rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Called by a rank still training, once per iteration (by the first joinable of its Join):
        returns the Work of the all-reduce counting the ranks still training (its tensor holds the
        count), or None outside an enabled Join. With throw_on_early_termination, raises on every
        rank once some rank has joined."""
        config = getattr(joinable, "_join_config", None)
        if config is None:
            raise TypeError(f"{type(joinable).__name__} is not a Joinable (it has no _join_config)")
        if not config.enable or not config.is_first_joinable:
            return None
        dist = _dist()
        pg = joinable.join_process_group
        ones = _one(1)
        # blocking, like the joined ranks' answer: the two sides must issue the same form of
        # all-reduce (the MPI backend checks sizes before a blocking one)
        dist.all_reduce(ones, group=pg)
        work = _CountWork(ones)
        if config.throw_on_early_termination:
            stop = _one(0)
            dist.all_reduce(stop, group=pg)
            if stop.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work


class _CountWork:
    """The (completed) Work of notify_join_context's all-reduce; `result()` is [the count of ranks
    still training]."""
    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def result(self):
        return [self._tensor]
