"""ZeroRedundancyOptimizer: an optimizer whose state is split across the ranks (ZeRO stage 1).

    ddp = DistributedDataParallel(model)
    opt = ZeroRedundancyOptimizer(ddp.parameters(), torch.optim.Adam, lr=1e-3)
    loss_fn(ddp(x), y).backward()                  # every rank has the averaged gradients
    opt.step()                                     # each rank updates its share, then shares it

The parameters are partitioned once, as PyTorch does: within each parameter group, largest first,
each parameter goes to the rank with the fewest elements so far (ties: the lowest rank; the counts
carry over from one group to the next). Each rank builds `optimizer_class` over its share only
(`.optim`, so `.optim.state` holds only its share's state); `step()` runs it and then broadcasts
every updated parameter from the rank that owns it (one coalesced broadcast per rank and dtype).
`state_dict()` needs `consolidate_state_dict(to)` on every rank first and exists on rank `to` only.

It is a Joinable (uneven inputs: `with Join([ddp, zero_opt]):`): as in PyTorch, a rank that has
joined keeps calling step() once per iteration of the others - its share is stepped again with the
gradients it last had, and broadcast as usual.
"""
from __future__ import annotations

import pickle

from ...optim.optimizer import Optimizer
from ...tensor import Tensor

__all__ = ["ZeroRedundancyOptimizer"]


def _dist():
    import tensorplug.distributed as dist
    return dist


class ZeroRedundancyOptimizer(Optimizer):
    """See the module docstring. `params`: tensors or parameter groups (the same on every rank);
    `optimizer_class`: the local optimizer (e.g. tensorplug.optim.SGD), built with `**defaults`;
    `parameters_as_bucket_view`: accepted (broadcasts are always coalesced);
    `overlap_with_ddp=True` is not supported."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported; "
                                      "call step() after backward instead")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError("ZeroRedundancyOptimizer: optimizer_class must be an Optimizer class such as "
                            f"tensorplug.optim.SGD, got {optimizer_class!r}")
        self._initialized = False
        super().__init__(params, defaults)
        dist = _dist()
        pg = dist.process_group.resolve(process_group)
        if pg is None:
            raise ValueError("ZeroRedundancyOptimizer: this process is not a member of process_group")
        self.process_group = pg
        self.world_size = pg.size()
        self.rank = pg.rank()
        self.global_rank = pg.global_rank(self.rank)
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self._all_state_dicts = []
        self._join_config = _join()._JoinConfig.disabled()
        self._clear_cache()
        self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self._initialized = True

    # -- partition ----------------------------------------------------------------------------------
    def _clear_cache(self):
        self._partition_cache = None
        self._param_to_rank_cache = None
        self._param_to_index_cache = None

    def _partition_parameters(self):
        """For each rank, its list of parameter groups (one per global group; its "params" may be empty)."""
        if self._partition_cache is None:
            sizes = [0] * self.world_size
            per_rank = [[] for _ in range(self.world_size)]
            for group in self.param_groups:
                shares = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = sizes.index(min(sizes))
                    shares[r].append(p)
                    sizes[r] += p.numel()
                for r in range(self.world_size):
                    g = {k: v for k, v in group.items() if k != "params"}
                    g["params"] = shares[r]
                    per_rank[r].append(g)
            self._partition_cache = per_rank
        return self._partition_cache

    @property
    def _param_to_rank(self):
        if self._param_to_rank_cache is None:
            self._param_to_rank_cache = {id(p): r for r, groups in enumerate(self._partition_parameters())
                                         for g in groups for p in g["params"]}
        return self._param_to_rank_cache

    @property
    def _param_to_index(self):
        if self._param_to_index_cache is None:
            params = [p for g in self.param_groups for p in g["params"]]
            self._param_to_index_cache = {id(p): i for i, p in enumerate(params)}
        return self._param_to_index_cache

    @staticmethod
    def _sync_param_groups(src, dst):
        """Copy the options (all but "params") of each group of `src` into the same group of `dst`."""
        for s, d in zip(src, dst):
            for k, v in s.items():
                if k != "params":
                    d[k] = v

    def add_param_group(self, param_group):
        """Add a parameter group; its parameters are partitioned like the others (the partition of the
        existing groups does not change)."""
        super().add_param_group(param_group)
        if not self._initialized:
            return
        self._clear_cache()
        mine = self._partition_parameters()[self.rank]
        self.optim.add_param_group(mine[-1])
        self._sync_param_groups(self.optim.param_groups, self.param_groups)

    # -- training -------------------------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """Update this rank's share with the local optimizer, then broadcast every parameter from the
        rank that owns it. Returns the closure's loss (None without a closure)."""
        _join().Join.notify_join_context(self)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(closure, **kwargs)
        self._sync_params()
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    # -- uneven inputs ----------------------------------------------------------------------------------
    def join_hook(self, **kwargs):
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        return self.param_groups[0]["params"][0].device

    @property
    def join_process_group(self):
        return self.process_group

    def _sync_params(self):
        if self.world_size == 1:
            return
        import tensorplug as torch
        dist = _dist()
        pg = self.process_group
        with torch.no_grad():
            for r, groups in enumerate(self._partition_parameters()):
                by_dtype = {}
                for g in groups:
                    for p in g["params"]:
                        by_dtype.setdefault(p.dtype, []).append(p)
                for ps in by_dtype.values():
                    flat = torch.cat([p.detach().reshape(-1) for p in ps])
                    dist.broadcast(flat, src=pg.global_rank(r), group=pg)
                    if r == self.rank:
                        continue
                    off = 0
                    for p in ps:
                        n = p.numel()
                        p.copy_(flat[off:off + n].reshape(p.shape))
                        off += n

    # -- checkpoints ------------------------------------------------------------------------------------
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collect every rank's share of the optimizer state on global rank `to` (collective: call it
        on every rank); `state_dict()` is then available there."""
        dist = _dist()
        pg = self.process_group
        dst = pg.group_rank(to, "destination rank")
        import numpy as np
        import tensorplug as torch
        payload = np.frombuffer(pickle.dumps(_to_portable(self.optim.state_dict())), dtype=np.uint8)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(self.world_size)]
        dist.all_gather(sizes, torch.tensor([payload.size], dtype=torch.int64), group=pg)
        if self.rank == dst:
            self._all_state_dicts = []
            for r in range(self.world_size):
                if r == dst:
                    data = payload
                else:
                    buf = torch.zeros(int(sizes[r].item()), dtype=torch.uint8)
                    dist.recv(buf, src=pg.global_rank(r), group=pg)
                    data = buf.numpy()
                self._all_state_dicts.append(_from_portable(pickle.loads(data.tobytes())))
        else:
            dist.send(torch.from_numpy(payload.copy()), dst=pg.global_rank(dst), group=pg)
            self._all_state_dicts = []

    def state_dict(self):
        """The whole optimizer's state dict (PyTorch's format: "state" by global parameter index,
        "param_groups" with index lists), on the rank given to the last consolidate_state_dict."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               "`consolidate_state_dict(to=0)` on all ranks beforehand if you meant to "
                               "save the global state.")
        sd = super().state_dict()
        state = {}
        for r, local in enumerate(self._all_state_dicts):
            for lg, gg in zip(local["param_groups"], self._partition_parameters()[r]):
                for j, local_index in enumerate(lg["params"]):
                    if local_index in local["state"]:
                        state[self._param_to_index[id(gg["params"][j])]] = local["state"][local_index]
        sd["state"] = dict(sorted(state.items()))
        return sd

    def load_state_dict(self, state_dict):
        """Load a state dict of `state_dict()` (the whole optimizer's): each rank keeps the state of
        its own share; the groups' options go everywhere."""
        params = [p for g in self.param_groups for p in g["params"]]
        if len(state_dict["param_groups"]) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, sg in zip(self.param_groups, state_dict["param_groups"]):
            if len(g["params"]) != len(sg["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                                 "of optimizer's group")
        for index, value in state_dict["state"].items():
            p = params[index]
            if self._param_to_rank[id(p)] == self.rank:
                self.optim.state[p] = {k: (Optimizer._process_value_according_to_param_policy(p, v, index, None, k)
                                           if isinstance(v, Tensor) else v) for k, v in value.items()}
        self._sync_param_groups(state_dict["param_groups"], self.param_groups)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)


class _ZeROJoinHook:
    """On a rank that has joined: one step() per iteration of the others (their broadcasts need it)."""

    def __init__(self, zero):
        self.zero = zero

    def main_hook(self):
        self.zero.step()

    def post_hook(self, is_last_joiner):
        pass


def _join():
    from ..algorithms import join
    return join


def _to_portable(obj):
    """Tensors as NumPy arrays, so that a state dict pickles without the tensor machinery."""
    if isinstance(obj, Tensor):
        return _Portable(obj.detach().cpu().numpy().copy())
    if isinstance(obj, dict):
        return {k: _to_portable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_portable(v) for v in obj)
    return obj


def _from_portable(obj):
    if isinstance(obj, _Portable):
        import tensorplug as torch
        return torch.from_numpy(obj.array)
    if isinstance(obj, dict):
        return {k: _from_portable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_from_portable(v) for v in obj)
    return obj


class _Portable:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getstate__(self):
        return self.array

    def __setstate__(self, array):
        self.array = array
