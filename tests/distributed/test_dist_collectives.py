"""Every point-to-point op and collective on 2 and 4 (oversubscribed) processes, checked on every
rank: several dtypes and shapes, 0-d, empty and non-contiguous tensors, async variants, groups,
differentiable collectives, argument errors, and the process-group life cycle
(workers/collectives.py does the work; one mpiexec job per world size)."""
import pytest

import _launch
from _launch import requires_mpi

FAMILIES = ["lifecycle", "all_reduce", "broadcast", "reduce", "all_gather", "gather", "scatter",
            "reduce_scatter", "barrier", "p2p", "groups", "autograd", "errors", "staging"]
job = _launch.WorkerJobs("collectives.py")


@requires_mpi
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", [2, 4])
def test_collective_family(n, family):
    checks = job.family(n, family)
    failed = {k: [e for e in v if e] for k, v in checks.items() if any(v)}
    report = "\n".join(f"{k}: {errs[0]}" for k, errs in list(failed.items())[:10])
    assert not failed, f"{len(failed)} of {len(checks)} {family} checks failed on some rank:\n{report}"


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_job_ends_cleanly(n):
    j = job(n)
    assert j.returncode == 0 and not j.timed_out, j.describe()
    assert len(j.result["checks"]) > 400
