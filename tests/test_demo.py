"""`tensorplug demo` (cli/demo.py), the digits that ship with the package (tensorplug.data) and the
PNG curves (tensorplug.utils.plot)."""
import json
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from typer.testing import CliRunner

import tensorplug
from tensorplug.cli.app import app
from tensorplug.cli import demo as demo_mod
from tensorplug.data import digits_path, load_digits
from tensorplug.utils import plot

runner = CliRunner()


# -- the data set ---------------------------------------------------------------------------------------
def test_digits_ship_with_the_package_with_their_citation():
    """digits.npz and DIGITS.md (source, DOI, licence) sit inside the package folder."""
    folder = os.path.dirname(digits_path())
    assert os.path.dirname(tensorplug.__file__) == os.path.dirname(folder)
    text = open(os.path.join(folder, "DIGITS.md")).read()
    for needle in ("Alpaydin", "Kaynak", "10.24432/C50P49", "CC BY 4.0", "UCI Machine Learning Repository"):
        assert needle in text


def test_load_digits_shapes_values_and_classes():
    x, y = load_digits()
    assert x.shape == (1797, 1, 8, 8) and x.dtype == tensorplug.float32
    assert y.shape == (1797,) and y.dtype == tensorplug.int64
    xn, yn = x.numpy(), y.numpy()
    assert xn.min() == 0.0 and xn.max() == 1.0
    assert np.bincount(yn).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    raw, raw_y = load_digits(raw=True)
    assert raw.shape == (1797, 8, 8) and raw.dtype == tensorplug.uint8 and raw_y.dtype == tensorplug.uint8
    assert np.array_equal(raw.numpy().astype(np.float32) / 16, xn[:, 0])
    # the first image of the UCI test file is a 0
    assert raw.numpy()[0, 0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0] and int(raw_y[0]) == 0


# -- PNG and curves -------------------------------------------------------------------------------------
def _read_png(path):
    """(width, height, pixels (H, W, 3)) of an 8-bit RGB, unfiltered PNG, checking every CRC."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks.setdefault(kind, b"")
        chunks[kind] += body
        pos += 12 + n
    assert pos == len(data) and b"IEND" in chunks
    w, h, depth, color, *_ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, color) == (8, 2)
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + 3 * w)
    assert (raw[:, 0] == 0).all()
    return w, h, raw[:, 1:].reshape(h, w, 3)


def test_write_png_round_trips_pixels(tmp_path):
    img = np.random.default_rng(0).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    plot.write_png(tmp_path / "a.png", img)
    w, h, px = _read_png(tmp_path / "a.png")
    assert (w, h) == (5, 7) and np.array_equal(px, img)
    with pytest.raises(ValueError):
        plot.write_png(tmp_path / "b.png", np.zeros((3, 3, 4)))


def test_training_curves_draw_both_panels_and_every_series(tmp_path):
    hist = {"train_loss": [2.0, 1.0, 0.5, 0.3], "val_loss": [2.1, 1.2, 0.7, 0.6],
            "train_acc": [0.3, 0.7, 0.9, 0.95], "val_acc": [0.25, 0.6, 0.85, 0.9]}
    plot.save_training_curves(tmp_path / "c.png", hist)
    w, h, px = _read_png(tmp_path / "c.png")
    assert (w, h) == (960, 360)
    for half in (px[:, :480], px[:, 480:]):           # loss panel, accuracy panel
        for color in plot.COLORS[:2]:                  # train and validation lines
            assert (half == color).all(axis=2).sum() > 100
    # a single epoch still draws (markers, no line)
    plot.save_training_curves(tmp_path / "d.png", {k: v[:1] for k, v in hist.items()})
    assert _read_png(tmp_path / "d.png")[0] == 960


def test_nice_ticks():
    assert plot.nice_ticks(0, 1) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert plot.nice_ticks(0.013, 2.26) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    assert plot.nice_ticks(1, 20, count=8) == [0, 5, 10, 15, 20]


# -- the command ----------------------------------------------------------------------------------------
def test_demo_short_run_learns_and_writes_its_outputs(tmp_path):
    """A 6-epoch run (the full run is 20) already classifies >= 93% of the held-out digits; the
    checkpoint reloads into the same architecture and gives the reported test accuracy."""
    out = tmp_path / "run"
    r = runner.invoke(app, ["demo", "--epochs", "6", "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, (r.output, r.exception)
    assert "epoch   6/6" in r.output and "test accuracy: " in r.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test_acc"] >= 0.93, metrics["test_acc"]
    assert metrics["split"] == {"train": 1257, "val": 270, "test": 270}
    assert len(metrics["history"]["val_acc"]) == 6 and metrics["epochs"] == 6
    assert f"test accuracy: {metrics['test_acc']:.1%} (270 images)" in r.output
    assert _read_png(out / "curves.png")[:2] == (960, 360)

    model = demo_mod.build_model(tensorplug.nn)
    model.load_state_dict(tensorplug.load(out / "model.tpl"))
    x, y = load_digits()
    split = tensorplug.utils.data.random_split(range(1797), list(demo_mod.SPLIT),
                                               generator=tensorplug.Generator().manual_seed(0))
    idx = tensorplug.tensor(list(split[2].indices))
    model.eval()
    with tensorplug.no_grad():
        acc = (model(x[idx]).argmax(1) == y[idx]).float().mean().item()
    assert acc == pytest.approx(metrics["test_acc"])


def test_demo_full_run_reaches_95_percent_within_a_minute(tmp_path):
    """The README's command (`python -m tensorplug demo`, 20 epochs) reaches >= 95% test accuracy
    in under 60 s."""
    r = subprocess.run([sys.executable, "-m", "tensorplug", "demo", "--out", str(tmp_path), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["test_acc"] >= 0.95, r.stdout
    assert metrics["seconds"] < 60, r.stdout
    assert r.stdout.strip().splitlines()[-1].startswith("test accuracy: ")


def test_demo_help_lists_its_options():
    r = runner.invoke(app, ["demo", "--help"])
    assert r.exit_code == 0
    for opt in ("--device", "--epochs", "--out"):
        assert opt in r.output


def test_demo_rejects_unknown_and_unavailable_devices(tmp_path):
    r = runner.invoke(app, ["demo", "--device", "nonesuch", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "nonesuch" in r.output
    if not tensorplug.backends.get("cuda").is_available()[0]:
        r = runner.invoke(app, ["demo", "--device", "cuda", "--out", str(tmp_path)])
        assert r.exit_code == 3 and "cuda" in r.output
    assert not (tmp_path / "metrics.json").exists()


def test_blas_threads_restores_the_thread_count():
    libs = demo_mod._openblas_libraries()
    if not libs:
        pytest.skip("NumPy does not use a discoverable OpenBLAS here")
    get = libs[0][0]
    before = get()
    with demo_mod.blas_threads(1):
        assert get() == 1
    assert get() == before


def test_demo_trains_on_another_device(tmp_path, add_backend):
    """--device puts the model, the batches and the evaluation on that device (here a NumPy-kernel
    backend that a plugin registers for a new device type, 'npu')."""
    backend = add_backend("numpy_npu", device_type="npu", counting=True)
    r = runner.invoke(app, ["demo", "--device", "npu", "--epochs", "2", "--out", str(tmp_path), "--no-progress"])
    assert r.exit_code == 0, (r.output, r.exception)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["device"] == "npu" and metrics["backend"] == "numpy_npu"
    assert metrics["test_acc"] > 0.5
    assert sum(backend.calls.values()) > 1000
    state = tensorplug.load(tmp_path / "model.tpl")
    assert {str(t.device) for t in state.values()} == {"npu"}
