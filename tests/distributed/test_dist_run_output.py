"""`tensorplug run`: every line a rank prints comes out prefixed with its rank (`[rank0]:`, as
torchrun --tee), whole and in order, none lost, also when another rank aborts the job."""
import os
import re
import sys

import pytest

import _launch
from _launch import requires_mpi

WORKER = os.path.join(_launch.WORKERS, "output.py")
TP = [sys.executable, "-m", "tensorplug", "run"]
# the launcher itself must make the ranks unbuffered: the test harness's PYTHONUNBUFFERED=1 is removed
ENV = {"PYTHONUNBUFFERED": "", "WORKER_WATCHDOG_S": "25"}
PREFIX = re.compile(r"^\[rank(\d+)\]:(.*)$")


def _by_rank(text):
    """{rank: [lines]} of prefixed lines; every line must carry a prefix."""
    out = {}
    for line in text.splitlines():
        m = PREFIX.match(line)
        assert m, f"line without a rank prefix: {line!r}"
        out.setdefault(int(m.group(1)), []).append(m.group(2))
    return out


def _expected(rank, lines):
    return [f"rank {rank} line {i:05d} " + "x" * (i % 97) + " ünïcödé" for i in range(lines)]


@requires_mpi
@pytest.mark.parametrize("n,lines", [(2, 3000), (3, 50)])
def test_every_line_is_prefixed_whole_and_in_order(n, lines):
    j = _launch.run(TP + ["-n", str(n), WORKER, str(lines)], timeout=90, env=ENV)
    assert j.returncode == 0, j.describe()
    out, err = _by_rank(j.stdout), _by_rank(j.stderr)
    assert sorted(out) == list(range(n)) and sorted(err) == list(range(n)), j.describe()
    for r in range(n):
        printed = [ln for ln in out[r] if ln.startswith(f"rank {r} line ")]
        assert printed == _expected(r, lines)
        assert f"child of rank {r}" in out[r]                       # a child process's output too
        assert out[r][-1] == f"rank {r} last words"                 # a last line without its newline
        assert err[r] == [f"rank {r} to stderr"]


@requires_mpi
def test_no_line_is_lost_when_a_rank_aborts():
    """The last rank raises while the others wait in a barrier: the job ends with an error, and
    every line the waiting ranks printed before is there, prefixed."""
    n, lines = 3, 200
    j = _launch.run(TP + ["-n", str(n), WORKER, str(lines), "abort"], timeout=60, env=ENV)
    assert not j.timed_out and j.returncode != 0, j.describe()
    out = _by_rank(j.stdout)
    for r in range(n):
        assert [ln for ln in out[r] if ln.startswith(f"rank {r} line ")] == _expected(r, lines), j.describe()
        assert f"rank {r} last words" in out[r]
    assert "unreachable" not in j.stdout
    failing = [ln for ln in j.stderr.splitlines() if ln.startswith(f"[rank{n - 1}]:")]
    assert f"[rank{n - 1}]:ValueError: rank {n - 1} fails on purpose" in failing, j.describe()


@requires_mpi
def test_no_prefix_passes_the_output_through():
    j = _launch.run(TP + ["-n", "2", "--no-prefix", WORKER, "3"], timeout=60, env=ENV)
    assert j.returncode == 0, j.describe()
    lines = j.stdout.splitlines()
    assert "rank 1 line 00002 xx ünïcödé" in lines and not any(PREFIX.match(ln) for ln in lines)
