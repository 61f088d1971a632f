"""Saving to a path is atomic, and a save removes what an earlier killed save to the same path left,
but never the temporary file of a save still running (it holds a lock) nor files of other paths."""
import os

import pytest

import tensorplug as tp
from tensorplug.serialization import load, save

fcntl = pytest.importorskip("fcntl")


def leftover(directory, base, tag="0123456789ab"):
    p = directory / f".{base}.{tag}.tmp"
    p.write_bytes(b"PK\x03\x04 half a checkpoint")
    return p


def test_leftovers_of_killed_saves_are_removed(tmp_path):
    a = leftover(tmp_path, "ckpt.pt")
    b = leftover(tmp_path, "ckpt.pt", "fedcba987654")
    others = [leftover(tmp_path, "other.pt"), tmp_path / ".ckpt.pt.notours.tmp", tmp_path / "ckpt.pt.tmp"]
    for p in others[1:]:
        p.write_bytes(b"x")
    save({"w": tp.ones(2)}, tmp_path / "ckpt.pt")
    assert not a.exists() and not b.exists()
    assert all(p.exists() for p in others)
    assert load(tmp_path / "ckpt.pt")["w"].tolist() == [1.0, 1.0]


def test_temporary_file_of_a_live_save_is_kept(tmp_path):
    live = leftover(tmp_path, "ckpt.pt")
    fd = os.open(live, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)                 # as a save in progress in another process holds it
        save({"w": tp.zeros(1)}, tmp_path / "ckpt.pt")
        assert live.exists()
    finally:
        os.close(fd)
    save({"w": tp.zeros(1)}, tmp_path / "ckpt.pt")     # no longer locked: removed
    assert sorted(os.listdir(tmp_path)) == ["ckpt.pt"]


def test_the_writer_holds_the_lock_while_writing(tmp_path, monkeypatch):
    from tensorplug.serialization import zip_archive
    seen = []
    real = zip_archive.ZipWriter.close

    def close(self):
        tmp = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
        fd = os.open(tmp_path / tmp[0], os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("unlocked")
        except BlockingIOError:
            seen.append("locked")
        finally:
            os.close(fd)
        real(self)
    monkeypatch.setattr(zip_archive.ZipWriter, "close", close)
    save([1], tmp_path / "x.pt")
    assert seen == ["locked"] and load(tmp_path / "x.pt") == [1]
