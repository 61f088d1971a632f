"""Every point-to-point op and collective on 2 and 4 (oversubscribed) processes, checked on every
rank: several dtypes and shapes, 0-d, empty and non-contiguous tensors, async variants, groups,
differentiable collectives, argument errors, and the process-group life cycle
(workers/collectives.py does the work; one mpiexec job per world size)."""
import pytest

import _launch
from _launch import requires_mpi

FAMILIES = ["lifecycle", "all_reduce", "broadcast", "reduce", "all_gather", "gather", "scatter",
            "reduce_scatter", "barrier", "p2p", "groups", "autograd", "errors", "staging"]
_jobs = {}


def job(n):
    if n not in _jobs:
        _jobs[n] = _launch.run_ranks(n, "collectives.py", timeout=90)
    return _jobs[n]


@requires_mpi
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", [2, 4])
def test_collective_family(n, family):
    j = job(n)
    res = j.result
    assert res["size"] == n
    checks = {k: v for k, v in res["checks"].items() if k.split(".")[0] == family}
    assert checks, f"no {family} checks ran\n{j.describe()}"
    failed = {k: [e for e in v if e] for k, v in checks.items() if any(v)}
    report = "\n".join(f"{k}: {errs[0]}" for k, errs in list(failed.items())[:10])
    assert not failed, f"{len(failed)} of {len(checks)} {family} checks failed on some rank:\n{report}"


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_job_ends_cleanly(n):
    j = job(n)
    assert j.returncode == 0 and not j.timed_out, j.describe()
    assert len(j.result["checks"]) > 400
