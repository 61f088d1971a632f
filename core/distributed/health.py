"""Which processes of the job have gone: `failed_peers(pg) -> {global rank: reason}`.

Every multi-process world has a TCPStore server in rank 0 (the env:// / tcp:// store itself, else one
started for this). Each rank keeps a liveness connection to it, opened by init_process_group. A rank
that exits says goodbye first (an atexit handler: "exited", or "exited with code 1 (uncaught X)"
when an uncaught exception ends it); the server records a rank whose connection drops without that
as "died (connection to the store lost)", and sends every rank the record whenever it changes, to a
thread here that keeps it. When the connection to the server itself is lost, rank 0 has died.
So `failed_peers` only reads a dict: it never blocks.
"""
from __future__ import annotations

import atexit
import json
import socket
import threading
import time

from .store import DIED, _frame, connect, recv_frame

__all__ = ["failed_peers", "start", "stop", "record_exit"]

SERVER_RANK = 0


class _Monitor:
    def __init__(self, host, port, rank, size, timeout):
        self.rank, self.size = rank, size
        self.failed = {}
        self.closing = False
        self.sock = connect(host, port, timeout)
        self.sock.sendall(_frame(b"REG", str(rank).encode()))
        self._update(recv_frame(self.sock))
        self.bye = threading.Event()
        self.thread = threading.Thread(target=self._listen, name="tensorplug.distributed health", daemon=True)
        self.thread.start()

    def _update(self, fields):
        if fields and fields[0] == b"HEALTH":
            record = {int(r): why for r, why in json.loads(fields[1]).items()}
            self.failed = {**self.failed, **record}     # a new dict: readers never see it half-made
        elif fields and fields[0] == b"BYE":
            self.bye.set()

    def _listen(self):
        try:
            while True:
                self._update(recv_frame(self.sock))
        except (OSError, ConnectionError, ValueError):
            pass
        if not self.closing and SERVER_RANK not in self.failed and self.rank != SERVER_RANK:
            self.failed = {**self.failed, SERVER_RANK: DIED}
        self.bye.set()

    def goodbye(self, reason, wait=2.0, linger=0.0):
        """Tell the server this rank leaves (`reason`), wait (bounded) until it passed that on.
        `linger` > 0: first (on the server's rank) wait until every other rank has left, or after
        (the others) until the server has closed, each for at most `linger` seconds; so a new
        rendezvous on the same port never meets the old server."""
        if self.closing:
            return
        if linger and self.rank == SERVER_RANK:
            deadline = time.monotonic() + linger
            while len(self.failed.keys() - {self.rank}) < self.size - 1 and time.monotonic() < deadline:
                time.sleep(0.005)
        self.closing = True
        try:
            self.sock.sendall(_frame(b"BYE", str(self.rank).encode(), reason.encode()))
            self.bye.wait(wait)
            if linger and self.rank != SERVER_RANK:
                self.thread.join(linger)
        except OSError:
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _State:
    monitor: _Monitor | None = None
    server_store = None             # the TCPStore this process serves only for liveness (rank 0)
    atexit_registered = False


_state = _State()


def start(host, port, rank, size, timeout=30.0, server_store=None):
    """Open this rank's liveness connection to the store server at host:port (init_process_group)."""
    stop()
    _state.server_store = server_store
    _state.monitor = _Monitor(host, port, rank, size, timeout)
    if not _state.atexit_registered:
        atexit.register(_at_exit)
        _state.atexit_registered = True


def record_exit(reason):
    """Say goodbye with `reason` now (e.g. before an abort)."""
    m = _state.monitor
    if m is not None:
        m.goodbye(reason)


LINGER = 5.0


def stop(reason="left the job (destroy_process_group)", linger=0.0):
    """Say goodbye and close the connection (and a liveness-only server this process runs).
    destroy_process_group lingers (see _Monitor.goodbye)."""
    m, _state.monitor = _state.monitor, None
    if m is not None:
        m.goodbye(reason, linger=linger)
    srv, _state.server_store = _state.server_store, None
    if srv is not None:
        srv.close()


def _at_exit():
    # Python does not tell atexit handlers the exit code; an uncaught exception was recorded already
    stop("exited")


def failed_peers(pg=None) -> dict:
    """{global rank: reason} for the members of `pg` (default: the world) known to have exited or
    died; this process's own rank is never in it. Never blocks (reads what the server last sent)."""
    m = _state.monitor
    if m is None:
        return {}
    failed = m.failed
    if not failed:
        return {}
    ranks = getattr(pg, "ranks", None)
    members = range(m.size) if ranks is None else ranks
    return {r: failed[r] for r in members if r in failed and r != m.rank}
