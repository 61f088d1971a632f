"""Shared-memory segments: the blocks of memory that shared tensors and storages live in.

A `Segment` is an `mmap.mmap` (MAP_SHARED) of a shared-memory file; a shared tensor's backend array
is a NumPy view of one, so `segment_of(array)` finds it down the array's base chain. How another
process finds the same memory is the sharing strategy:

  file_descriptor  the file is anonymous (`memfd_create`; elsewhere a file in /dev/shm unlinked at
                   once), so it has no name that could outlive the processes: it is freed when the
                   last mapping and descriptor close, whatever way the processes end. A pickle
                   carries a duplicate of the descriptor (multiprocessing's DupFd: passed at process
                   start, else fetched from the sender, which must still be alive, over a Unix socket).
  file_system      the file has a name in /dev/shm; a pickle carries the name. A count of mappings
                   and pickles in flight at the end of the segment (updated under flock) says when the
                   last user unlinks it, and the resource tracker unlinks what a crash left behind.
                   Costs no descriptor per segment (for processes that hold very many).
"""
from __future__ import annotations

import fcntl
import mmap
import os
import secrets
import weakref

import numpy as np

__all__ = ["Segment", "new_segment", "segment_of", "handle", "open_handle"]

_SHM_DIR = "/dev/shm"
_COUNT = 8                     # file_system: bytes of the reference count after the data


class Segment(mmap.mmap):
    """A mapped shared-memory file: `fd` (file_descriptor) or `name` (file_system), `key` (the same
    in every process), `nbytes` (the data's size)."""


def _anonymous_fd():
    if hasattr(os, "memfd_create"):
        return os.memfd_create("tensorplug", os.MFD_CLOEXEC)
    path = os.path.join(_SHM_DIR if os.path.isdir(_SHM_DIR) else "/tmp", "tensorplug_" + secrets.token_hex(8))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.unlink(path)
    return fd


def _map_fd(fd, nbytes, key):
    seg = Segment(fd, max(nbytes, 1))
    seg.fd, seg.name, seg.key, seg.nbytes = fd, None, key, nbytes
    weakref.finalize(seg, os.close, fd)
    _CACHE[key] = seg
    return seg


def _map_name(name, nbytes, create):
    path = os.path.join(_SHM_DIR, name)
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        raise RuntimeError(f"shared memory segment {name!r} no longer exists: the process that sent the "
                           f"tensor released it before this one received it") from None
    try:
        if create:
            os.ftruncate(fd, nbytes + _COUNT)
        seg = Segment(fd, nbytes + _COUNT)
    finally:
        os.close(fd)
    seg.fd, seg.name, seg.key, seg.nbytes = None, name, ("file_system", name), nbytes
    _add_ref(seg, 1)                                   # this mapping's reference
    weakref.finalize(seg, _release_name, name, seg.nbytes, os.getpid())
    _CACHE[seg.key] = seg
    return seg


def _count(seg):
    return np.frombuffer(seg, np.int64, 1, seg.nbytes)


def _add_ref(seg, n):
    """Add n to the segment's count under its lock; unlink it when the count reaches 0."""
    fd = os.open(os.path.join(_SHM_DIR, seg.name), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        c = _count(seg)
        c[0] += n
        left = int(c[0])
        del c
        if left <= 0:
            _unlink(seg.name)
    finally:
        os.close(fd)


def _release_name(name, nbytes, pid):
    # the mapping is gone: map the count alone again to drop this process's reference (a forked
    # child inherited the mapping without counting it)
    if os.getpid() != pid:
        return
    try:
        fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with mmap.mmap(fd, nbytes + _COUNT) as m:
            c = np.frombuffer(m, np.int64, 1, nbytes)
            c[0] -= 1
            left = int(c[0])
            del c
        if left <= 0:
            _unlink(name)
    finally:
        os.close(fd)


def _unlink(name):
    try:
        os.unlink(os.path.join(_SHM_DIR, name))
    except FileNotFoundError:
        pass
    _track("unregister", name)


def _track(what, name):
    try:
        from multiprocessing import resource_tracker
        getattr(resource_tracker, what)("/" + name, "shared_memory")
    except Exception:            # pragma: no cover - no tracker (e.g. at interpreter exit)
        pass


# key -> Segment mapped in this process (so that what is sent twice arrives as one block of memory)
_CACHE = weakref.WeakValueDictionary()


def new_segment(nbytes: int, strategy: str) -> Segment:
    """A fresh zero-filled segment of `nbytes` bytes for `strategy`."""
    if strategy == "file_system":
        name = f"tensorplug_{os.getpid()}_{secrets.token_hex(8)}"
        _track("register", name)
        return _map_name(name, nbytes, create=True)
    fd = _anonymous_fd()
    os.ftruncate(fd, max(nbytes, 1))
    st = os.fstat(fd)
    return _map_fd(fd, nbytes, ("file_descriptor", st.st_dev, st.st_ino))


def segment_of(array):
    """The Segment a NumPy array views (None when it views ordinary memory)."""
    obj = array
    while isinstance(obj, np.ndarray):
        obj = obj.base
    if isinstance(obj, memoryview):
        obj = obj.obj
    return obj if isinstance(obj, Segment) else None


def handle(seg):
    """What a pickle carries so another process maps the same segment (see open_handle)."""
    if seg.name is not None:
        _add_ref(seg, 1)                               # in flight: dropped by the receiver
        return ("file_system", seg.name, seg.nbytes)
    from multiprocessing.reduction import DupFd
    return ("file_descriptor", DupFd(seg.fd), seg.nbytes, seg.key)


def open_handle(h) -> Segment:
    """The segment a handle names, mapped in this process (once: later handles reuse it)."""
    if h[0] == "file_system":
        _, name, nbytes = h
        seg = _CACHE.get(("file_system", name))
        if seg is None:
            seg = _map_name(name, nbytes, create=False)
        _add_ref(seg, -1)                              # the pickle's reference, now received
        return seg
    _, dupfd, nbytes, key = h
    fd = dupfd.detach()
    seg = _CACHE.get(key)
    if seg is not None:
        os.close(fd)
        return seg
    return _map_fd(fd, nbytes, key)
