"""The C allocator NumPy's arrays come from: `import tensorplug` pins glibc malloc's thresholds.

glibc's malloc serves a block above its mmap threshold (128 KiB at start, raised to the size of each
mmapped block the process frees, up to 32 MiB) with a fresh mmap, and gives the top of its heap back
to the OS whenever more than the trim threshold (twice the mmap threshold) is free there. A training
step allocates and frees the same few-MiB temporaries (activations, gradients, the intermediate
arrays of a pointwise formula) on every call, so with the defaults most of them land on freshly
faulted pages, every step. Measured on a 2-vCPU AMD EPYC: exact GELU of 196,608 float32 took 3.4 ms
with the defaults and 0.70 ms pinned; a nanoGPT shakespeare_char iteration (2 layers x 64) 23 ms
and 18 ms (docs/allocator.md).

Pinned: mmap threshold 32 MiB (glibc's largest on 64-bit: blocks below it come from the heap and are
reused) and trim threshold 128 MiB (up to that much free heap is kept for the next step). Nothing
is changed when the user chose: `TENSORPLUG_MALLOC=default`, any of glibc's MALLOC_*_ variables or
a `glibc.malloc` tunable in GLIBC_TUNABLES; or when the C library is not glibc.
"""
from __future__ import annotations

import os

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # mallopt's parameter numbers (malloc.h)
_USER_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_",
              "MALLOC_ARENA_MAX")

state = [None]      # what `pin()` did, in words (tensorplug._malloc.state[0]; printed by the benchmarks)


def _user_choice() -> str | None:
    if os.environ.get("TENSORPLUG_MALLOC", "pinned") == "default":
        return "TENSORPLUG_MALLOC=default"
    named = [k for k in _USER_VARS if k in os.environ]
    if named:
        return named[0]
    if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES"
    return None


def pin() -> str:
    """Pin glibc malloc's mmap and trim thresholds (once; later calls return what the first did)."""
    if state[0] is not None:
        return state[0]
    chosen = _user_choice()
    if chosen:
        state[0] = f"glibc defaults or the user's settings ({chosen})"
        return state[0]
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version      # only glibc has it: another C library's malloc is left alone
        ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    except (OSError, AttributeError):
        state[0] = "the platform's default (not glibc)"
        return state[0]
    state[0] = (f"glibc malloc pinned: mmap threshold {MMAP_THRESHOLD >> 20} MiB, trim threshold "
                f"{TRIM_THRESHOLD >> 20} MiB" if ok else "glibc defaults (mallopt refused)")
    return state[0]
