"""The key-value stores in one process: TCPStore (server thread + a client in another thread),
FileStore, HashStore, PrefixStore; blocking get/wait and their timeout errors; the server's liveness
record (a rank whose connection drops, one that says goodbye)."""
import threading
import time
from datetime import timedelta

import pytest

import tensorplug.distributed as dist
from tensorplug.distributed import health, store as store_mod


def _stores(tmp_path):
    master = dist.TCPStore("localhost", 0, world_size=2, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=5))
    client = dist.TCPStore("localhost", master.port, world_size=2, timeout=timedelta(seconds=5))
    f1 = dist.FileStore(str(tmp_path / "fs"), 2)
    f2 = dist.FileStore(str(tmp_path / "fs"), 2)
    h = dist.HashStore()
    return {"tcp": (master, client), "file": (f1, f2), "hash": (h, h),
            "prefix": (dist.PrefixStore("p", master), dist.PrefixStore("p", client))}


@pytest.fixture
def stores(tmp_path):
    made = _stores(tmp_path)
    yield made
    for a, b in made.values():
        for s in (b, a):
            if hasattr(s, "close"):
                s.close()


@pytest.mark.parametrize("kind", ["tcp", "file", "hash", "prefix"])
def test_operations(stores, kind):
    """set/get/add/compare_set/check/delete_key/num_keys, seen from the second handle."""
    a, b = stores[kind]
    n0 = b.num_keys()
    a.set("k", "v1")
    assert b.get("k") == b"v1"
    a.set(b"k2", b"\x00\xff")
    assert b.get("k2") == b"\x00\xff"
    assert a.add("n", 3) == 3 and b.add("n", -5) == -2 and a.get("n") == b"-2"
    assert b.compare_set("k", "v1", "v2") == b"v2" and a.get("k") == b"v2"
    assert b.compare_set("k", "nope", "v3") == b"v2" and a.get("k") == b"v2"
    assert b.compare_set("fresh", "", "x") == b"x" and a.get("fresh") == b"x"
    assert b.compare_set("absent", "e", "x") == b"e" and not a.check(["absent"])
    assert a.check(["k", "k2", "n"]) and not a.check(["k", "zzz"])
    assert b.num_keys() - n0 == 4
    assert a.delete_key("k2") is True and a.delete_key("k2") is False and not b.check(["k2"])
    assert b.num_keys() - n0 == 3
    with pytest.raises(TypeError, match="bytes or str"):
        a.set("bad", 3)


@pytest.mark.parametrize("kind", ["tcp", "file", "hash", "prefix"])
def test_get_and_wait_block_until_the_key_is_set(stores, kind):
    a, b = stores[kind]
    t = threading.Timer(0.2, lambda: a.set("late", "here"))
    t.start()
    t0 = time.monotonic()
    b.wait(["late"], timedelta(seconds=5))
    assert 0.15 < time.monotonic() - t0 < 4
    threading.Timer(0.1, lambda: a.set("late2", "x")).start()
    assert b.get("late2") == b"x"


@pytest.mark.parametrize("kind", ["tcp", "file", "hash", "prefix"])
def test_timeouts_name_the_keys(stores, kind):
    a, b = stores[kind]
    a.set("there", "1")
    t0 = time.monotonic()
    with pytest.raises(dist.DistStoreError, match=r"timed out after 0\.3 s .*'(p/)?never'") as e:
        b.wait(["there", "never"], timedelta(seconds=0.3))
    assert isinstance(e.value, RuntimeError) and "there" not in str(e.value).split("key(s)")[1]
    assert 0.25 < time.monotonic() - t0 < 3
    b.set_timeout(timedelta(seconds=0.2))
    assert b.timeout == timedelta(seconds=0.2)
    with pytest.raises(dist.DistStoreError, match=r"timed out after 0\.2 s .*'(p/)?missing'"):
        b.get("missing")


def test_prefix_store_keys_live_under_the_prefix(stores):
    master, client = stores["tcp"]
    p = dist.PrefixStore("job", client)
    p.set("a", "1")
    assert master.get("job/a") == b"1" and not master.check(["a"]) and p.underlying_store is client


def test_tcp_store_port_in_use_and_unreachable_master():
    a = dist.TCPStore("localhost", 0, is_master=True, wait_for_workers=False)
    try:
        with pytest.raises(dist.DistNetworkError, match=f"cannot listen on port {a.port}"):
            dist.TCPStore("localhost", a.port, is_master=True, wait_for_workers=False)
        port = a.port
    finally:
        a.close()
    # multi_tenant: a second master store in this process reuses the server the first one started
    t = dist.TCPStore("localhost", 0, is_master=True, multi_tenant=True, wait_for_workers=False)
    t2 = dist.TCPStore("localhost", t.port, is_master=True, multi_tenant=True, wait_for_workers=False)
    t.set("x", "1")
    assert t2.get("x") == b"1"
    t.close(), t2.close()
    with pytest.raises(dist.DistNetworkError, match=f"could not connect to localhost:{port} within 0.3 s"):
        dist.TCPStore("localhost", port, timeout=timedelta(seconds=0.3))


def test_master_waits_for_workers():
    out = {}

    def master():
        try:
            out["m"] = dist.TCPStore("localhost", 29731, world_size=2, is_master=True,
                                     timeout=timedelta(seconds=5))
        except Exception as e:  # noqa: BLE001
            out["err"] = e
    th = threading.Thread(target=master)
    th.start()
    time.sleep(0.3)
    assert "m" not in out                      # still waiting for the second worker
    c = dist.TCPStore("localhost", 29731, world_size=2, timeout=timedelta(seconds=5))
    th.join(5)
    assert "m" in out, out
    c.close(), out["m"].close()
    with pytest.raises(dist.DistStoreError, match="waiting for 3 workers to connect"):
        dist.TCPStore("localhost", 0, world_size=3, is_master=True, timeout=timedelta(seconds=0.3))


def test_file_store_removes_its_file_after_the_last_user(tmp_path):
    path = tmp_path / "f"
    a, b = dist.FileStore(str(path)), dist.FileStore(str(path))
    a.set("x", "1")
    a.close()
    assert path.exists() and b.get("x") == b"1"
    b.close()
    assert not path.exists()


def test_liveness_record_of_the_server():
    """A rank that says goodbye is recorded with its reason, one whose connection drops as died;
    every liveness connection is sent the record."""
    srv = dist.TCPStore("localhost", 0, is_master=True, wait_for_workers=False)
    try:
        health.start("localhost", srv.port, 0, 3)
        import socket
        others = []
        for r in (1, 2):
            s = socket.create_connection(("localhost", srv.port))
            s.sendall(store_mod._frame(b"REG", str(r).encode()))
            assert store_mod.recv_frame(s)[0] == b"HEALTH"
            others.append(s)
        assert health.failed_peers() == {}
        others[0].sendall(store_mod._frame(b"BYE", b"1", b"exited"))
        others[1].close()
        deadline = time.monotonic() + 5
        while len(health.failed_peers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert health.failed_peers() == {1: "exited", 2: "died (connection to the store lost)"}
        t0 = time.perf_counter()
        for _ in range(1000):
            health.failed_peers()
        assert time.perf_counter() - t0 < 0.05         # a dict read, no round trip
        others[0].close()
    finally:
        health.stop()
        srv.close()
