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
job = _launch.WorkerJobs("sync_batchnorm.py")


def expected(n):
    return CHECKS | (MULTI if n > 1 else SINGLE) | (FOUR if n == 4 else set())


@requires_mpi
@pytest.mark.parametrize("n, check", [(n, c) for n in (1, 2, 4) for c in sorted(expected(n))])
def test_sync_batchnorm(n, check):
    job.assert_passed(n, f"sbn.{check}")


@requires_mpi
@pytest.mark.parametrize("n", [1, 2, 4])
def test_every_check_is_listed(n):
    assert {k.split(".", 1)[1] for k in job(n).result["checks"]} == expected(n)
