"""DistributedDataParallel on 2 and 4 (oversubscribed) processes: each rank trains on its share of
every batch and ends with the parameters of one process training on the whole batch, for several
steps of SGD with momentum (workers/ddp.py computes the single-process reference on every rank)."""
import pytest

import _launch
from _launch import requires_mpi

CHECKS = ["equivalence_sgd_momentum", "equivalence_float64", "small_buckets_start_during_backward",
          "one_bucket_per_parameter", "unused_parameters", "find_unused_parameters",
          "no_sync_accumulation", "mixed_dtypes", "buffers_broadcast_from_rank0",
          "model_mismatch_raises_everywhere", "state_dict_and_unwrapped_backward",
          "seed_sampler_set_epoch_loop", "large_chunked_buckets"]
job = _launch.WorkerJobs("ddp.py")


@requires_mpi
@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("n", [2, 4])
def test_ddp(n, check):
    job.assert_passed(n, f"ddp.{check}")


@requires_mpi
def test_every_ddp_check_is_listed():
    assert {k.split(".", 1)[1] for k in job(2).result["checks"]} == set(CHECKS)
