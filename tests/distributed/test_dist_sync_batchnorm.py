"""nn.SyncBatchNorm on 1, 2 and 4 (oversubscribed) processes against a single-process float64 batch norm
of the whole batch (workers/sync_batchnorm.py computes the reference on every rank)."""
import pytest

import _launch
from _launch import requires_mpi

CHECKS = {"even_4d", "five_d", "momentum_none_cumulative", "float32_large_offset_stable", "float16_input",
          "eval_mode_is_local", "ddp_equivalence"}
FOUR = {"sub_groups"}
MULTI = {"uneven_with_empty_rank", "one_row_per_rank_2d", "errors_on_every_rank"}
SINGLE = {"gradcheck_function"}
_jobs = {}


def job(n):
    if n not in _jobs:
        _jobs[n] = _launch.run_ranks(n, "sync_batchnorm.py", timeout=90)
    return _jobs[n]


def expected(n):
    return CHECKS | (MULTI if n > 1 else SINGLE) | (FOUR if n == 4 else set())


@requires_mpi
@pytest.mark.parametrize("n, check", [(n, c) for n in (1, 2, 4) for c in sorted(expected(n))])
def test_sync_batchnorm(n, check):
    j = job(n)
    assert j.result is not None, j.describe()
    assert j.result["size"] == n
    errors = j.result["checks"].get(f"sbn.{check}")
    assert errors is not None, f"sbn.{check} did not run\n{j.describe()}"
    bad = [(r, e) for r, e in enumerate(errors) if e]
    assert not bad, "\n".join(f"rank {r}: {e}" for r, e in bad)


@requires_mpi
@pytest.mark.parametrize("n", [1, 2, 4])
def test_every_check_is_listed(n):
    assert {k.split(".", 1)[1] for k in job(n).result["checks"]} == expected(n)
