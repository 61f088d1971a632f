"""spawn / start_processes and ProcessContext.join's errors."""
import os
import signal
import time

import pytest

import tensorplug as tp
import tensorplug.multiprocessing as mp

pytestmark = pytest.mark.timeout(60)


def _fill(i, t):
    t[i] = i + 10


def _raise_on_1(i):
    if i == 1:
        raise ValueError("boom from rank 1")
    time.sleep(30)                          # terminated by the parent once rank 1 failed


def _exit_3(i):
    os._exit(3)


def _killed(i):
    os.kill(os.getpid(), signal.SIGKILL)


def _sleep(i, seconds):
    time.sleep(seconds)


def test_spawn_runs_fn_with_rank_and_shared_args():
    """Each process gets its rank; a tensor among args is shared, so their writes are seen."""
    t = tp.zeros(2)
    assert mp.spawn(_fill, args=(t,), nprocs=2) is None
    assert t.tolist() == [10., 11.]


def test_raised_exception_carries_the_traceback():
    ctx = mp.start_processes(_raise_on_1, nprocs=2, join=False, start_method="fork")
    with pytest.raises(mp.ProcessRaisedException) as info:
        while not ctx.join():
            pass
    e = info.value
    assert e.error_index == 1 and e.error_pid == ctx.pids()[1]
    assert "-- Process 1 terminated with the following error:" in str(e)
    assert "Traceback (most recent call last)" in str(e) and "ValueError: boom from rank 1" in str(e)
    assert "_raise_on_1" in str(e)
    assert not any(p.is_alive() for p in ctx.processes)      # the other rank was terminated


def test_exit_code_and_signal():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.start_processes(_exit_3, start_method="fork")
    assert (info.value.exit_code, info.value.signal_name, info.value.error_index) == (3, None, 0)
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with signal SIGKILL") as info:
        mp.start_processes(_killed, start_method="fork")
    assert info.value.exit_code == -signal.SIGKILL and info.value.signal_name == "SIGKILL"


def test_join_timeout_returns_false_while_running():
    ctx = mp.start_processes(_sleep, args=(1.0,), nprocs=1, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext)
    assert ctx.join(timeout=0.05) is False
    assert ctx.join(timeout=20) is True
    assert ctx.join() is True


def test_spawn_with_another_start_method_warns():
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(_sleep, args=(0,), start_method="fork")


def test_exceptions_pickle():
    import pickle
    e = pickle.loads(pickle.dumps(mp.ProcessExitedException("m", 1, 2, -9, "SIGKILL")))
    assert (str(e), e.error_index, e.error_pid, e.exit_code, e.signal_name) == ("m", 1, 2, -9, "SIGKILL")
    with pytest.raises(ValueError, match="nprocs"):
        mp.start_processes(_sleep, args=(0,), nprocs=0)
