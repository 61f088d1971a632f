"""import tensorplug pins glibc malloc's thresholds (core/_malloc.py): a step's multi-MiB temporaries
then come from the heap, not from fresh mmaps. Checked in child processes, by where a 4 MiB NumPy
array lands: inside the process's [heap] mapping or outside it."""
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                                reason="the thresholds are glibc malloc's (this is not Linux with glibc)")

_WHERE = """
import sys
import tensorplug, numpy as np
a = np.empty(4 << 20, np.uint8)
addr = a.ctypes.data
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[heap]"):
        lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
        if lo <= addr < hi:
            print("heap", tensorplug._malloc.state[0]); break
else:
    print("mmap", tensorplug._malloc.state[0])
"""


def _where(**env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "TENSORPLUG_MALLOC"}
    clean.update(env)
    out = subprocess.run([sys.executable, "-c", _WHERE], env=clean, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split(maxsplit=1)


def test_pinned_by_default_a_4mib_array_comes_from_the_heap():
    where, state = _where()
    assert state.strip() == "glibc malloc pinned: mmap threshold 32 MiB, trim threshold 128 MiB"
    assert where == "heap"


def test_tensorplug_malloc_default_leaves_glibc_alone():
    where, state = _where(TENSORPLUG_MALLOC="default")
    assert state.strip() == "glibc defaults or the user's settings (TENSORPLUG_MALLOC=default)"
    assert where == "mmap"          # glibc's starting mmap threshold is 128 KiB


def test_the_users_own_malloc_variable_wins():
    where, state = _where(MALLOC_MMAP_THRESHOLD_="131072")
    assert "MALLOC_MMAP_THRESHOLD_" in state
    assert where == "mmap"
