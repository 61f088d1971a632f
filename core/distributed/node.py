"""This process's place on its node: get_node_local_rank, and the check of barrier's device_ids."""
from __future__ import annotations

import os

__all__ = ["get_node_local_rank"]


def get_node_local_rank(fallback_rank=None) -> int:
    """This process's rank among the processes of its node, as the launcher sets it in the
    LOCAL_RANK environment variable (e.g. to choose a device per process). Without LOCAL_RANK,
    `fallback_rank` when given, else RuntimeError."""
    local = os.environ.get("LOCAL_RANK")
    if local is not None:
        try:
            return int(local)
        except ValueError:
            raise RuntimeError(f"LOCAL_RANK={local!r} in the environment is not an integer") from None
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("get_node_local_rank: LOCAL_RANK is not set in the environment (the launcher sets "
                       "it); pass fallback_rank= to run without such a launcher, e.g. in one process")


def check_device_ids(device_ids, op="barrier"):
    """`device_ids` of barrier: None or a list of ints (device indices of this node); TypeError
    otherwise. The devices do not change what a barrier does here."""
    if device_ids is None:
        return None
    if not isinstance(device_ids, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in device_ids):
        raise TypeError(f"{op}: device_ids must be a list of ints (device indices), got {device_ids!r}")
    return device_ids
