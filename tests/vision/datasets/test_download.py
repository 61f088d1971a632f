"""download_url / extract_archive and download=True, against a local HTTP server (no network)."""
import functools
import gzip
import hashlib
import http.server
import io
import os
import socket
import tarfile
import threading
import zipfile

import numpy as np
import pytest

from tensorplug.vision import datasets
from tensorplug.vision.datasets import utils

from ._files import idx_bytes, mnist_arrays, write_cifar

pytest.importorskip("PIL")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """(folder served, base URL) of an HTTP server on 127.0.0.1 in a thread."""
    folder = tmp_path / "served"
    folder.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def dead_url():
    """A URL on a port nobody listens on: the connection is refused at once, as without network."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/"


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def test_download_url_checks_md5(server, tmp_path):
    folder, base = server
    payload = os.urandom(5000)
    (folder / "blob.bin").write_bytes(payload)
    dest = tmp_path / "dest"
    utils.download_url(base + "blob.bin", str(dest), md5=_md5(payload))
    assert (dest / "blob.bin").read_bytes() == payload
    assert utils.check_integrity(dest / "blob.bin", _md5(payload)) and utils.calculate_md5(dest / "blob.bin") == _md5(payload)
    (folder / "blob.bin").unlink()                           # a good copy is not fetched again
    utils.download_url(base + "blob.bin", dest, md5=_md5(payload))
    (folder / "other.bin").write_bytes(b"tampered")
    with pytest.raises(RuntimeError, match="File not found or corrupted."):
        utils.download_url(base + "other.bin", dest, filename="saved.bin", md5=_md5(payload))
    assert not (dest / "saved.bin").exists()                   # the bad file does not stay
    assert not utils.check_integrity(dest / "missing.bin")


def test_extract_archive_formats_and_refusals(tmp_path):
    files = {"a.txt": b"alpha", "sub/b.txt": b"beta"}
    tgz = tmp_path / "x.tar.gz"
    with tarfile.open(tgz, "w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    zpath = tmp_path / "x.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    for archive in (tgz, zpath):
        out = tmp_path / ("out_" + archive.name.replace(".", "_"))
        assert utils.extract_archive(str(archive), str(out)) == str(out)
        assert {n: (out / n).read_bytes() for n in files} == files
    (tmp_path / "c.bin.gz").write_bytes(gzip.compress(b"gamma"))
    result = utils.extract_archive(tmp_path / "c.bin.gz", remove_finished=True)
    assert open(result, "rb").read() == b"gamma" and not (tmp_path / "c.bin.gz").exists()
    with pytest.raises(RuntimeError, match="Unknown compression or archive type: '.rar'"):
        utils.extract_archive(tmp_path / "x.rar")
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as t:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        t.addfile(info, io.BytesIO(b"!"))
    with pytest.raises(RuntimeError, match="evil.tar: cannot extract"):
        utils.extract_archive(evil, tmp_path / "safe")
    assert not (tmp_path / "outside.txt").exists()
    (tmp_path / "bad.tar.gz").write_bytes(b"not gzip")
    with pytest.raises(RuntimeError, match="bad.tar.gz: cannot extract"):
        utils.extract_archive(tmp_path / "bad.tar.gz", tmp_path)


def _serve_mnist(folder):
    """The four MNIST .gz files in `folder`; returns resources (name, md5) and the arrays."""
    resources, arrays = [], {}
    for split, n, seed in (("train", 6, 1), ("t10k", 4, 2)):
        images, labels = mnist_arrays(n, seed)
        arrays[split] = (images, labels)
        for kind, arr in (("images-idx3", images), ("labels-idx1", labels)):
            name = f"{split}-{kind}-ubyte.gz"
            data = gzip.compress(idx_bytes(arr))
            (folder / name).write_bytes(data)
            resources.append((name, _md5(data)))
    return resources, arrays


def test_mnist_download_from_a_mirror(server, dead_url, tmp_path, monkeypatch):
    """download=True tries the mirrors in turn (the first refuses), checks the MD5 and unpacks."""
    folder, base = server
    resources, arrays = _serve_mnist(folder)
    monkeypatch.setattr(datasets.MNIST, "mirrors", [dead_url, base])
    monkeypatch.setattr(datasets.MNIST, "resources", resources)
    ds = datasets.MNIST(tmp_path / "data", train=False, download=True)
    np.testing.assert_array_equal(ds.data.numpy(), arrays["t10k"][0])
    np.testing.assert_array_equal(ds.targets.numpy(), arrays["t10k"][1])
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert (raw / "train-images-idx3-ubyte").is_file() and (raw / "train-images-idx3-ubyte.gz").is_file()
    for f in folder.iterdir():                       # now present: nothing is fetched again
        f.unlink()
    assert len(datasets.MNIST(tmp_path / "data", download=True)) == 6


def test_mnist_download_md5_mismatch_and_no_network(server, dead_url, tmp_path, monkeypatch):
    folder, base = server
    resources, _ = _serve_mnist(folder)
    resources[2] = (resources[2][0], "0" * 32)                  # t10k images: wrong checksum
    monkeypatch.setattr(datasets.MNIST, "mirrors", [base])
    monkeypatch.setattr(datasets.MNIST, "resources", resources)
    with pytest.raises(RuntimeError) as e:
        datasets.MNIST(tmp_path / "a", train=False, download=True)
    msg = str(e.value)
    assert "t10k-images-idx3-ubyte" in msg and "File not found or corrupted" in msg
    assert os.path.join(str(tmp_path / "a"), "MNIST", "raw") in msg
    assert not (tmp_path / "a" / "MNIST" / "raw" / "t10k-images-idx3-ubyte.gz").exists()

    monkeypatch.setattr(datasets.MNIST, "mirrors", [dead_url])
    with pytest.raises(RuntimeError) as e:
        datasets.MNIST(tmp_path / "b", download=True)
    msg = str(e.value)
    assert msg.count("\n") < 12 and msg.startswith("Dataset not found: MNIST needs these files in")
    assert "train-images-idx3-ubyte" in msg and "train-labels-idx1-ubyte" in msg and "Connection refused" in msg


def test_cifar_download_and_unpack(server, tmp_path, monkeypatch):
    folder, base = server
    src, _, classes = write_cifar(tmp_path / "made")
    with tarfile.open(folder / "cifar-10-python.tar.gz", "w:gz") as t:
        t.add(src, arcname="cifar-10-batches-py")
    md5 = utils.calculate_md5(folder / "cifar-10-python.tar.gz")
    monkeypatch.setattr(datasets.CIFAR10, "url", base + "cifar-10-python.tar.gz")
    monkeypatch.setattr(datasets.CIFAR10, "tgz_md5", md5)
    ds = datasets.CIFAR10(tmp_path / "data", train=False, download=True)
    assert ds.classes == classes and len(ds) == 4
    monkeypatch.setattr(datasets.CIFAR10, "tgz_md5", "f" * 32)
    with pytest.raises(RuntimeError, match="(?s)cifar-10-batches-py.*corrupted"):
        datasets.CIFAR10(tmp_path / "other", download=True)
