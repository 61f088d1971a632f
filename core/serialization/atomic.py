"""Writing a file atomically: a crash or kill at any moment leaves the old file or the new one.

The data goes to a temporary file `.<name>.<12 hex>.tmp` in the same directory, which is flushed,
fsync'ed and renamed over the target (os.replace); the directory is fsync'ed after. The writer holds
an exclusive lock (flock) on its temporary file while it writes, so the next save to the same path
can tell a leftover of a killed save (no lock held: removed) from a save still running in another
process (locked: left alone).
"""
from __future__ import annotations

import os
import re
import stat
import uuid

try:
    import fcntl
except ImportError:              # Windows: an open file cannot be deleted, which protects live writers
    fcntl = None

__all__ = ["write_atomically"]


def _tmp_pattern(base):
    return re.compile(r"\." + re.escape(base) + r"\.[0-9a-f]{12}\.tmp\Z")


def _remove_leftovers(directory, base):
    """Remove temporary files of earlier saves to `base` that no live process holds."""
    pat = _tmp_pattern(base)
    try:
        names = [n for n in os.listdir(directory) if pat.match(n)]
    except OSError:
        return
    for n in names:
        p = os.path.join(directory, n)
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue                 # a save in progress (or no locking here): keep it
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and os.lstat(p).st_ino == st.st_ino:
                os.unlink(p)
        except OSError:
            pass
        finally:
            os.close(fd)


def _create_locked(directory, base):
    """(fd, path) of a new temporary file, locked, still linked at path."""
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{uuid.uuid4().hex[:12]}.tmp")
        # O_EXCL: never follows or reuses someone else's file; mode 0o666 is reduced by the umask
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                pass
        try:
            if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                return fd, tmp
        except FileNotFoundError:
            pass                              # removed by another save's cleanup before we locked it
        os.close(fd)
    raise OSError(f"could not create a temporary file in {directory!r}")


def write_atomically(path, write):
    """Call write(binary file) on a temporary file, then move it over `path` (see the module
    docstring). A symbolic link is kept: the file it points to is replaced."""
    if os.path.islink(path):
        path = os.path.realpath(path)
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    _remove_leftovers(directory, base)
    fd, tmp = _create_locked(directory, base)
    try:
        with os.fdopen(fd, "wb") as fh:
            try:
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))     # an existing file keeps its mode
            except FileNotFoundError:
                pass
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
            if fcntl is not None:
                os.replace(tmp, path)         # while locked: a cleanup never sees it unlocked
        if fcntl is None:
            os.replace(tmp, path)             # (Windows renames closed files only)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    """Make the rename durable (best effort; not possible on every platform)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
