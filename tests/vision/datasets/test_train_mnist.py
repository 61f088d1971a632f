"""examples/train_mnist.py: trains on MNIST files placed under --root, says where they go otherwise."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tensorplug

from ._files import write_mnist

pytest.importorskip("PIL")
SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "train_mnist.py"


def _run(*args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=240, env=env)


def test_train_mnist_without_files_says_where_to_put_them(tmp_path):
    r = _run("--root", str(tmp_path / "data"))
    assert r.returncode == 2
    assert os.path.join(str(tmp_path / "data"), "MNIST", "raw") in r.stderr
    assert "train-images-idx3-ubyte" in r.stderr and "--download" in r.stderr


def test_train_mnist_trains_on_the_files(tmp_path):
    write_mnist(tmp_path, n_train=40, n_test=12, gz=True)
    r = _run("--root", str(tmp_path), "--epochs", "1", "--batch-size", "16", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "epoch 1: train loss" in r.stdout and "(40 images)" in r.stdout and "/12 (" in r.stdout
    state = tensorplug.load(tmp_path / "out" / "mnist_cnn.tpl")
    assert tuple(state["fc1.weight"].shape) == (128, 9216)
