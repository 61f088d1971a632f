"""DDP as PyTorch has it on 2 and 4 (oversubscribed) processes: communication hooks, join on uneven
inputs, the buffer broadcast schedule under no_sync, the unused-parameter error, and
ZeroRedundancyOptimizer (workers/ddp_more.py: one job per world size, each check against a
single-process computation); plus tensorplug.futures.Future in this process."""
import pytest

import _launch
from _launch import requires_mpi

CHECKS = ["hook_allreduce_and_bucket_surface", "hook_fp16_compress", "hook_custom_future_and_errors",
          "join_divide_by_initial_world_size", "join_divide_by_active_ranks", "join_with_allreduce_hook",
          "join_buffers_from_highest_training_rank",
          "join_throw_on_early_termination", "join_generic_errors",
          "buffers_follow_pytorch_schedule_under_no_sync", "unused_parameter_error_names_them",
          "zero_sgd_momentum", "zero_adam", "zero_add_param_group", "zero_with_join"]
job = _launch.WorkerJobs("ddp_more.py")


@requires_mpi
@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("n", [2, 4])
def test_ddp_more(n, check):
    job.assert_passed(n, f"more.{check}")


@requires_mpi
def test_every_check_is_listed():
    assert {k.split(".", 1)[1] for k in job(2).result["checks"]} == set(CHECKS)


def test_future_then_chains_and_carries_errors():
    from tensorplug.futures import Future, collect_all, wait_all
    f = Future()
    doubled = f.then(lambda x: x.value() * 2)
    plus_one = doubled.then(lambda x: x.value() + 1)
    assert not f.done() and not plus_one.done()
    with pytest.raises(RuntimeError, match="has not completed"):
        f.value()
    f.set_result(20)
    assert (doubled.wait(), plus_one.wait(), plus_one.value()) == (40, 41, 41)
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(1)
    g = Future()
    failed = g.then(lambda x: 1 / 0)
    after = failed.then(lambda x: x.value() + 1)        # the error reaches the end of the chain
    g.set_result(1)
    with pytest.raises(ZeroDivisionError):
        after.wait()
    calls = []
    h = Future()
    h.add_done_callback(lambda x: calls.append(x.value()))
    h.set_result("a")
    h.add_done_callback(lambda x: calls.append(x.value() + "b"))   # already done: runs at once
    assert calls == ["a", "ab"]
    e = Future()
    e.set_exception(ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        e.wait()
    with pytest.raises(TypeError):
        Future().set_exception("not an exception")
    a, b = Future(), Future()
    both = collect_all([a, b])
    a.set_result(1)
    b.set_result(2)
    assert [x.value() for x in both.wait()] == [1, 2] and wait_all([a, b]) == [1, 2]
    with pytest.raises(RuntimeError, match="nothing will complete"):
        Future().wait()


def test_future_of_work_completes_on_wait():
    from tensorplug.futures import Future

    class FakeWork:
        waited = 0

        def wait(self):
            FakeWork.waited += 1
            return True
    fut = Future._of_work(FakeWork(), ["tensor"])
    chained = fut.then(lambda x: x.value()[0] + "!")
    assert not fut.done()
    assert chained.wait() == "tensor!" and FakeWork.waited == 1 and fut.value() == ["tensor"]


def test_joinable_and_grad_bucket_surface():
    import tensorplug as torch
    from tensorplug.distributed.algorithms import Join, Joinable, JoinHook
    from tensorplug.distributed.grad_bucket import GradBucket
    from tensorplug.nn.parallel import DistributedDataParallel
    assert issubclass(DistributedDataParallel, Joinable) and not issubclass(int, Joinable)
    with pytest.raises(ValueError, match="at least one joinable"):
        Join([])
    with pytest.raises(TypeError, match="Joinable"):
        Join([object()])
    hook = JoinHook()
    assert hook.main_hook() is None and hook.post_hook(True) is None
    buf = torch.arange(6.0)
    views = [buf[:4].reshape(2, 2), buf[4:]]
    b = GradBucket(1, buf, ["p", "q"], views, True)
    assert (b.index(), b.is_last(), b.parameters(), b.buffer() is buf) == (1, True, ["p", "q"], True)
    assert [tuple(v.shape) for v in b.gradients()] == [(2, 2), (2,)]
    with pytest.raises(ValueError, match="shape"):
        b.set_buffer(torch.zeros(5))
    new = torch.ones(6)
    b.set_buffer(new)
    assert b.buffer() is new
