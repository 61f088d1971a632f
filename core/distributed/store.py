"""Key-value stores the processes of a job meet through (PyTorch's `Store` API).

    store = dist.TCPStore("localhost", 0, world_size=2, is_master=True)   # server in this process
    client = dist.TCPStore("localhost", store.port, world_size=2)         # in another process
    client.set("ready", "yes");  store.get("ready")  # b'yes' (get blocks until the key exists)

Values are bytes (a str is stored UTF-8 encoded). `get` and `wait` block until the keys exist or the
store's timeout passes (then DistStoreError, a RuntimeError, naming the keys and the timeout).
TCPStore is pure Python: the master runs the server in a daemon thread. The server also keeps the
liveness record health.py reads (which connection belongs to which rank, who said goodbye); that is
not part of the key space.
"""
from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import threading
import time
from datetime import timedelta

from .errors import DistNetworkError, DistStoreError

__all__ = ["Store", "TCPStore", "FileStore", "HashStore", "PrefixStore"]

DEFAULT_STORE_TIMEOUT = timedelta(seconds=300)


def _bytes(v, what="value") -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise TypeError(f"store {what} must be bytes or str, got {type(v).__name__}")


def _key(k) -> str:
    if isinstance(k, bytes):
        return k.decode()
    if not isinstance(k, str):
        raise TypeError(f"store key must be a str, got {type(k).__name__}")
    return k


def _seconds(timeout) -> float:
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")


class Store:
    """The common interface. A subclass provides `_set _get _add _cas _delete _num_keys` (`_get` is
    None for a missing key); blocking get/wait poll `_get` with a backoff up to 20 ms."""

    def __init__(self, timeout=DEFAULT_STORE_TIMEOUT):
        self._timeout = _seconds(timeout)

    @property
    def timeout(self) -> timedelta:
        return timedelta(seconds=self._timeout)

    def set_timeout(self, timeout) -> None:
        self._timeout = _seconds(timeout)

    def set(self, key, value) -> None:
        self._set(_key(key), _bytes(value))

    def get(self, key) -> bytes:
        key = _key(key)
        v = self._get(key)
        if v is None:
            self._block([key], self._timeout, "get")
            v = self._get(key)
        return v

    def add(self, key, amount) -> int:
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise TypeError(f"store add amount must be an int, got {type(amount).__name__}")
        return self._add(_key(key), amount)

    def compare_set(self, key, expected_value, desired_value) -> bytes:
        """Set `desired_value` if the key holds `expected_value` (or is missing and `expected_value`
        is empty); returns the value the key holds afterwards (`expected_value` if it is missing)."""
        return self._cas(_key(key), _bytes(expected_value, "expected_value"),
                         _bytes(desired_value, "desired_value"))

    def check(self, keys) -> bool:
        return all(self._get(_key(k)) is not None for k in keys)

    def wait(self, keys, timeout=None) -> None:
        keys = [_key(k) for k in keys]
        self._block(keys, self._timeout if timeout is None else _seconds(timeout), "wait")

    def delete_key(self, key) -> bool:
        return self._delete(_key(key))

    def num_keys(self) -> int:
        return self._num_keys()

    def missing(self, keys) -> list:
        """The keys of `keys` that do not exist (yet)."""
        return [k for k in keys if self._get(_key(k)) is None]

    def _block(self, keys, timeout, op):
        deadline = time.monotonic() + timeout
        pause = 0.001
        pending = list(keys)
        while True:
            pending = [k for k in pending if self._get(k) is None]
            if not pending:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise DistStoreError(f"{type(self).__name__}.{op}: timed out after {timeout:g} s waiting "
                                     f"for key(s) {', '.join(map(repr, self._public(pending)))}")
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.02)

    def _public(self, keys):
        return keys


# -- HashStore ---------------------------------------------------------------------------------------
class HashStore(Store):
    """A store in this process's memory (thread-safe), e.g. for threads or tests."""

    def __init__(self):
        super().__init__()
        self._d = {}
        self._lock = threading.Lock()

    def _set(self, k, v):
        with self._lock:
            self._d[k] = v

    def _get(self, k):
        return self._d.get(k)

    def _add(self, k, n):
        with self._lock:
            v = int(self._d.get(k, b"0")) + n
            self._d[k] = str(v).encode()
            return v

    def _cas(self, k, expected, desired):
        with self._lock:
            return _cas_dict(self._d, k, expected, desired)

    def _delete(self, k):
        with self._lock:
            return self._d.pop(k, None) is not None

    def _num_keys(self):
        return len(self._d)


def _cas_dict(d, k, expected, desired):
    cur = d.get(k)
    if (cur is None and expected == b"") or (cur is not None and cur == expected):
        d[k] = desired
        return desired
    return expected if cur is None else cur


# -- PrefixStore -------------------------------------------------------------------------------------
class PrefixStore(Store):
    """Every key of `store` seen through this one is prefixed with `prefix` + "/"."""

    def __init__(self, prefix, store):
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore needs a Store, got {type(store).__name__}")
        self._store = store
        self._prefix = _key(prefix) + "/"

    @property
    def underlying_store(self):
        return self._store

    @property
    def _timeout(self):                  # the underlying store's
        return self._store._timeout

    @_timeout.setter
    def _timeout(self, seconds):
        self._store._timeout = seconds

    def _set(self, k, v):
        self._store._set(self._prefix + k, v)

    def _get(self, k):
        return self._store._get(self._prefix + k)

    def _add(self, k, n):
        return self._store._add(self._prefix + k, n)

    def _cas(self, k, expected, desired):
        return self._store._cas(self._prefix + k, expected, desired)

    def _delete(self, k):
        return self._store._delete(self._prefix + k)

    def _num_keys(self):
        return self._store._num_keys()

    def _block(self, keys, timeout, op):
        self._store._block([self._prefix + k for k in keys], timeout, op)


# -- FileStore ---------------------------------------------------------------------------------------
class FileStore(Store):
    """A store in a file that every process can open (a shared file system for several machines).

    Each operation locks the file (fcntl), reads it, and rewrites it when it changes. The processes
    that opened it are counted; the last one to `close()` (or be collected) removes the file, so a
    new job needs a file that does not exist yet (as PyTorch's file:// init method says)."""
    _USERS = "\0filestore/users"

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        try:
            import fcntl
        except ImportError:          # Windows
            raise RuntimeError("FileStore needs fcntl file locks (Linux, macOS)") from None
        self._fcntl = fcntl
        self.path = os.fspath(file_name)
        self.world_size = world_size
        self._lock = threading.Lock()
        self._closed = False
        self._add(self._USERS, 1)

    def _locked(self, fn):
        with self._lock:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                self._fcntl.flock(fd, self._fcntl.LOCK_EX)
                with os.fdopen(os.dup(fd), "r+b") as f:
                    raw = f.read()
                    d = _decode_map(raw)
                    result, changed = fn(d)
                    if changed:
                        f.seek(0)
                        f.write(_encode_map(d))
                        f.truncate()
                return result
            finally:
                os.close(fd)             # releases the lock

    def _set(self, k, v):
        def op(d):
            d[k] = v
            return None, True
        self._locked(op)

    def _get(self, k):
        if not os.path.exists(self.path):
            return None
        return self._locked(lambda d: (d.get(k), False))

    def _add(self, k, n):
        def op(d):
            v = int(d.get(k, b"0")) + n
            d[k] = str(v).encode()
            return v, True
        return self._locked(op)

    def _cas(self, k, expected, desired):
        return self._locked(lambda d: (_cas_dict(d, k, expected, desired), True))

    def _delete(self, k):
        return self._locked(lambda d: (d.pop(k, None) is not None, True))

    def _num_keys(self):
        return self._locked(lambda d: (sum(1 for k in d if not k.startswith("\0")), False))

    def close(self):
        """Stop using the file; the last user removes it."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._add(self._USERS, -1) <= 0:
                os.unlink(self.path)
        except OSError:
            pass

    def __del__(self):
        try:
            self.close()
        except Exception:   # noqa: BLE001 - interpreter shutdown
            pass


def _encode_map(d) -> bytes:
    out = []
    for k, v in d.items():
        kb = k.encode()
        out.append(struct.pack("!II", len(kb), len(v)) + kb + v)
    return b"".join(out)


def _decode_map(raw) -> dict:
    d, i = {}, 0
    while i + 8 <= len(raw):
        kl, vl = struct.unpack_from("!II", raw, i)
        i += 8
        d[raw[i:i + kl].decode()] = raw[i + kl:i + kl + vl]
        i += kl + vl
    return d


# -- TCPStore: wire format ---------------------------------------------------------------------------
# a frame is a 4-byte length, then fields, each a 4-byte length and its bytes
def _frame(*fields) -> bytes:
    body = b"".join(struct.pack("!I", len(f)) + f for f in fields)
    return struct.pack("!I", len(body)) + body


def _fields(body) -> list:
    out, i = [], 0
    while i < len(body):
        (n,) = struct.unpack_from("!I", body, i)
        out.append(body[i + 4:i + 4 + n])
        i += 4 + n
    return out


def _recv_exact(sock, n) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the store server closed the connection")
        buf += chunk
    return bytes(buf)


def recv_frame(sock) -> list:
    (n,) = struct.unpack("!I", _recv_exact(sock, 4))
    return _fields(_recv_exact(sock, n))


DIED = "died (connection to the store lost)"


class _Server:
    """The TCPStore server: one selector loop in a daemon thread; every command is answered at once
    (blocking gets are client-side polls). Connections that said `REG <rank>` are a rank's liveness
    link: when one closes without `BYE`, the rank is recorded as died; every REG connection is sent
    the liveness record (JSON {rank: reason}) whenever it changes."""

    def __init__(self, port):
        try:
            if socket.has_dualstack_ipv6():
                self.sock = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
            else:
                self.sock = socket.create_server(("", port))
        except OSError as e:
            raise DistNetworkError(f"TCPStore: the server cannot listen on port {port}: {e.strerror or e}"
                                   f"{' (another job or store uses it?)' if e.errno == 98 else ''}") from None
        self.port = self.sock.getsockname()[1]
        self.data = {}
        self.joined = 0
        self.ranks = {}             # liveness connection -> rank
        self.failed = {}            # rank -> reason
        self.bufs = {}
        self.sel = selectors.DefaultSelector()
        self.sock.setblocking(False)
        self.sel.register(self.sock, selectors.EVENT_READ)
        self._wake_r, self._wake_w = socket.socketpair()
        self.sel.register(self._wake_r, selectors.EVENT_READ)
        self.running = True
        self.users = 0
        self.thread = threading.Thread(target=self._loop, name=f"TCPStore server :{self.port}", daemon=True)
        self.thread.start()

    def stop(self):
        if self.running:
            self.running = False
            try:
                self._wake_w.send(b"x")
            except OSError:
                pass
            if threading.current_thread() is not self.thread:
                self.thread.join(2)

    def _loop(self):
        try:
            while self.running:
                for key, _ in self.sel.select():
                    s = key.fileobj
                    if s is self.sock:
                        try:
                            conn, _ = s.accept()
                        except OSError:
                            continue
                        conn.setblocking(True)
                        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        self.bufs[conn] = bytearray()
                        self.sel.register(conn, selectors.EVENT_READ)
                    elif s is self._wake_r:
                        pass
                    else:
                        self._read(s)
        finally:
            self.sock.close()           # first: no client may connect to a server that is going
            for conn in list(self.bufs):
                conn.close()
            self.sel.close()
            self._wake_r.close()
            self._wake_w.close()

    def _read(self, conn):
        try:
            chunk = conn.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        buf = self.bufs[conn]
        buf += chunk
        while len(buf) >= 4:
            (n,) = struct.unpack_from("!I", buf, 0)
            if len(buf) < 4 + n:
                break
            body = bytes(buf[4:4 + n])
            del buf[:4 + n]
            try:
                reply = self._handle(conn, _fields(body))
                if reply is not None:
                    conn.sendall(reply)
            except OSError:
                self._drop(conn)
                return

    def _drop(self, conn):
        self.sel.unregister(conn)
        self.bufs.pop(conn, None)
        conn.close()
        rank = self.ranks.pop(conn, None)
        if rank is not None and rank not in self.failed:
            self.failed[rank] = DIED
            self._publish()

    def _publish(self):
        msg = _frame(b"HEALTH", json.dumps(self.failed).encode())
        for conn in list(self.ranks):
            try:
                conn.sendall(msg)
            except OSError:
                pass

    def _handle(self, conn, f):
        cmd, d = f[0], self.data
        if cmd == b"SET":
            d[f[1].decode()] = f[2]
            return _frame(b"")
        if cmd == b"GET":
            v = d.get(f[1].decode())
            return _frame(b"0") if v is None else _frame(b"1", v)
        if cmd == b"ADD":
            k = f[1].decode()
            v = int(d.get(k, b"0")) + int(f[2])
            d[k] = str(v).encode()
            return _frame(d[k])
        if cmd == b"CAS":
            return _frame(_cas_dict(d, f[1].decode(), f[2], f[3]))
        if cmd == b"DEL":
            return _frame(b"1" if d.pop(f[1].decode(), None) is not None else b"0")
        if cmd == b"NUM":
            return _frame(str(len(d)).encode())
        if cmd == b"JOIN":
            self.joined += 1
            return _frame(str(self.joined).encode())
        if cmd == b"JOINED":
            return _frame(str(self.joined).encode())
        if cmd == b"REG":                            # a rank's liveness link (see health.py)
            self.ranks[conn] = int(f[1])
            return _frame(b"HEALTH", json.dumps(self.failed).encode())
        if cmd == b"BYE":
            rank = int(f[1])
            self.failed[rank] = f[2].decode()
            for c, r in list(self.ranks.items()):
                if r == rank:
                    del self.ranks[c]
            self._publish()
            return _frame(b"BYE")
        return _frame(b"ERR", b"unknown command " + cmd)


_servers = {}                   # port -> _Server (multi_tenant TCPStores of this process share one)
_servers_lock = threading.Lock()


class TCPStore(Store):
    """A store served over TCP by the master process (`is_master=True`), whose server runs in a
    daemon thread; every process (the master too) is a client.

    port=0 on the master picks a free port (`.port` says which). Clients retry connecting until
    `timeout`. With `wait_for_workers` and a `world_size`, the master's constructor returns once
    `world_size` stores (its own included) have connected. `multi_tenant`: TCPStores of this process
    on the same port share one server."""

    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=DEFAULT_STORE_TIMEOUT,
                 wait_for_workers=True, multi_tenant=False, master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port < 65536:
            raise ValueError(f"TCPStore: port must be an int in [0, 65535], got {port!r}")
        if world_size is not None and world_size != -1 and (not isinstance(world_size, int) or world_size < 1):
            raise ValueError(f"TCPStore: world_size must be a positive int or None, got {world_size!r}")
        self.host = str(host_name)
        self.world_size = None if world_size == -1 else world_size
        self._server = None
        self._lock = threading.Lock()
        if is_master:
            with _servers_lock:
                srv = _servers.get(port) if multi_tenant and port else None
                if srv is None or not srv.running:
                    srv = _Server(port)
                    if multi_tenant:
                        _servers[srv.port] = srv
                srv.users += 1
            self._server = srv
            port = srv.port
        self._port = port
        deadline = time.monotonic() + self._timeout
        while True:
            self._sock = connect(self.host if not is_master else "localhost", port,
                                 max(0.1, deadline - time.monotonic()))
            try:
                self._rpc(b"JOIN")
                break
            except DistStoreError:      # a server that was closing as we connected: the next one
                if time.monotonic() > deadline:
                    raise
                self._sock.close()
                time.sleep(0.05)
        if is_master and wait_for_workers and self.world_size:
            deadline = time.monotonic() + self._timeout
            while int(self._rpc(b"JOINED")[0]) < self.world_size:
                if time.monotonic() > deadline:
                    n = int(self._rpc(b"JOINED")[0])
                    raise DistStoreError(f"TCPStore: timed out after {self._timeout:g} s waiting for "
                                         f"{self.world_size} workers to connect ({n} did)")
                time.sleep(0.005)

    @property
    def port(self) -> int:
        return self._port

    @property
    def host_name(self):
        return self.host

    @property
    def libuvBackend(self) -> bool:
        return False

    def _rpc(self, *fields) -> list:
        with self._lock:
            if self._sock is None:
                raise DistStoreError("TCPStore: the store is closed")
            try:
                self._sock.sendall(_frame(*fields))
                return recv_frame(self._sock)
            except (OSError, ConnectionError) as e:
                raise DistStoreError(f"TCPStore: lost the connection to the store server at "
                                     f"{self.host}:{self._port} ({e})") from None

    def _set(self, k, v):
        self._rpc(b"SET", k.encode(), v)

    def _get(self, k):
        r = self._rpc(b"GET", k.encode())
        return r[1] if r[0] == b"1" else None

    def _add(self, k, n):
        return int(self._rpc(b"ADD", k.encode(), str(n).encode())[0])

    def _cas(self, k, expected, desired):
        return self._rpc(b"CAS", k.encode(), expected, desired)[0]

    def _delete(self, k):
        return self._rpc(b"DEL", k.encode())[0] == b"1"

    def _num_keys(self):
        return int(self._rpc(b"NUM")[0])

    def close(self):
        """Close the connection (and, on the master, stop the server when no other store of this
        process uses it)."""
        with self._lock:
            s, self._sock = self._sock, None
        if s is not None:
            s.close()
        srv, self._server = self._server, None
        if srv is not None:
            with _servers_lock:
                srv.users -= 1
                if srv.users <= 0:
                    srv.stop()
                    if _servers.get(srv.port) is srv:
                        del _servers[srv.port]

    def __del__(self):
        try:
            self.close()
        except Exception:   # noqa: BLE001 - interpreter shutdown
            pass


def connect(host, port, timeout) -> socket.socket:
    """A TCP connection to host:port, retried until `timeout` seconds pass (the server may not be
    listening yet); DistNetworkError naming the address after that."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        try:
            s = socket.create_connection((host, port), timeout=max(0.1, min(5.0, deadline - time.monotonic())))
            s.settimeout(None)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except socket.gaierror as e:
            raise DistNetworkError(f"TCPStore: cannot resolve the host name {host!r}: {e}") from None
        except OSError as e:
            if time.monotonic() + pause > deadline:
                raise DistNetworkError(f"TCPStore: could not connect to {host}:{port} within {timeout:.3g} s "
                                       f"({e.strerror or e}); is the master process (rank 0) running, and "
                                       f"are MASTER_ADDR / MASTER_PORT right?") from None
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
