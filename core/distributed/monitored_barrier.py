"""monitored_barrier: a barrier that names the ranks that did not reach it.

Rank 0 of the group waits (up to the timeout) for one small message from every other rank, then
answers each; the others send theirs and wait for rank 0's answer. Ranks that are missing at the
deadline are named in a DistBackendError on rank 0 (the first one, or with wait_all_ranks=True all
of them); the others wait ANSWER_GRACE_S longer for the answer (so that rank 0 reports first), then
raise too. Point-to-point only, so it also works where a
collective would hang; slower than barrier() (use it to debug).
"""
from __future__ import annotations

import time

__all__ = ["monitored_barrier"]

TAG = 32512             # below 32767, the least tag bound MPI guarantees; user code rarely picks it
ANSWER_GRACE_S = 1.0    # the others wait this much longer than rank 0, so that rank 0 names the missing
_abandoned = []         # requests given up on, with their buffers (the backend may still use them)


def _seconds(timeout, pg):
    if timeout is None:
        timeout = getattr(pg, "timeout", None)
    if timeout is None:
        return 1800.0
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


def _poll(reqs, deadline):
    """Poll requests until all are complete or `deadline`; the indices of those still pending."""
    nap = 50e-6
    while True:
        pending = [i for i, r in enumerate(reqs) if r is not None and not r.is_completed()]
        if not pending or time.perf_counter() >= deadline:
            return pending
        time.sleep(nap)
        nap = min(nap * 2, 1e-3)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """Like barrier(), but rank 0 of the group raises DistBackendError naming the rank(s) that did
    not arrive within `timeout` (a timedelta or seconds; default: the group's timeout):
    "Rank 1 failed to pass monitoredBarrier in 2000 ms" (wait_all_ranks=True: every missing rank,
    "Ranks 1, 3 failed to pass ..."). The other ranks raise when rank 0 does not answer in time."""
    import numpy as np

    from .collectives import _group
    from .errors import DistBackendError
    pg = _group(group)
    if pg is None:
        return None
    limit = _seconds(timeout, pg)
    if limit <= 0:
        raise ValueError(f"monitored_barrier: timeout must be positive, got {timeout!r}")
    h, b = pg.handle, pg.backend
    n, me = h.size, h.rank
    if n == 1:
        return None
    ms = int(round(limit * 1000))
    deadline = time.perf_counter() + limit
    if me != 0:
        token = np.ones(1, np.uint8)
        answer = np.zeros(1, np.uint8)
        sent = b.isend(token, 0, TAG, h)
        got = b.irecv(answer, 0, TAG, h)
        if _poll([sent, got], deadline + ANSWER_GRACE_S):
            _abandoned.append((sent, got, token, answer))
            root = pg.global_rank(0)
            raise DistBackendError(f"[Rank {pg.global_rank(me)}]: monitored_barrier: no answer from rank {root} "
                                   f"within {ms} ms (+{ANSWER_GRACE_S:g} s): rank {root} did not reach the "
                                   f"barrier, or another rank did not and rank {root} raised")
        return None
    tokens = [np.zeros(1, np.uint8) for _ in range(n)]
    reqs = [None] + [b.irecv(tokens[i], i, TAG, h) for i in range(1, n)]
    missing = _poll(reqs, deadline)
    if missing:
        _abandoned.append((reqs, tokens))
        ranks = [pg.global_rank(i) for i in missing]
        if not wait_all_ranks:
            ranks = ranks[:1]
        who = f"Rank {ranks[0]}" if len(ranks) == 1 else f"Ranks {', '.join(map(str, ranks))}"
        raise DistBackendError(f"[Rank {pg.global_rank(0)}]: {who} failed to pass monitoredBarrier in {ms} ms")
    ok = np.ones(1, np.uint8)
    answers = [b.isend(ok, i, TAG, h) for i in range(1, n)]
    for r in answers:
        r.wait()
    return None
