"""`tensorplug demo` (cli/demo.py), the digits that ship with the package (tensorplug.data), the
pictures (cli/demo_figures.py, matplotlib) and the TensorBoard logs (cli/demo_log.py)."""
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import tensorplug
from tensorplug.cli.app import app
from tensorplug.cli import demo as demo_mod
from tensorplug.cli import demo_figures
from tensorplug.data import digits_path, load_digits

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


# -- the pictures ---------------------------------------------------------------------------------------
FACTS = {"backend": "numpy", "device": "cpu", "test_acc": 0.9963, "test_images": 270}
HIST = {"train_loss": [2.0, 1.0, 0.5, 0.3], "val_loss": [2.1, 1.2, 0.7, 0.6],
        "train_acc": [0.3, 0.7, 0.9, 0.95], "val_acc": [0.25, 0.6, 0.91, 0.9]}


def _png(path):
    """(height, width) of a PNG, read back by matplotlib; it must not be one flat colour."""
    import matplotlib.image
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    px = matplotlib.image.imread(path)
    assert px.ndim == 3 and px[..., :3].std() > 0.05
    return px.shape[:2]


def test_curves_title_axes_and_best_epoch(tmp_path):
    fig = demo_figures.curves(HIST, 3, FACTS)
    title = fig.get_suptitle()
    assert "backend numpy" in title and "device cpu" in title and "test accuracy 99.6%" in title
    loss, acc = fig.axes
    assert (loss.get_xlabel(), acc.get_xlabel()) == ("epoch", "epoch")
    assert loss.get_ylabel() == "cross-entropy loss" and acc.get_ylabel() == "accuracy"
    for ax, key in ((loss, "loss"), (acc, "acc")):
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert list(lines["training"].get_ydata()) == HIST[f"train_{key}"]
        assert list(lines["validation"].get_ydata()) == HIST[f"val_{key}"]
        assert list(lines["epoch kept (3)"].get_xdata()) == [3, 3]            # the best epoch's line
    star = next(ln for ln in acc.get_lines() if ln.get_label().startswith("best validation"))
    assert (list(star.get_xdata()), list(star.get_ydata())) == ([3], [0.91])
    assert "91.0%" in star.get_label()
    demo_figures.save(fig, tmp_path / "c.png")
    assert _png(tmp_path / "c.png") == (420, 1000)


def test_confusion_matrix_counts_and_figure():
    true = [0, 0, 1, 2, 2, 2]
    pred = [0, 1, 1, 2, 2, 0]
    counts = demo_figures.confusion_matrix(pred, true, classes=3)
    assert counts.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]
    fig = demo_figures.confusion(counts, FACTS)
    (ax,) = fig.axes
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    assert cells == {(0, 0): "1", (0, 1): "1", (1, 1): "1", (2, 0): "1", (2, 2): "2"}
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("predicted digit", "true digit")
    assert "2 of 6 wrong" in ax.get_title() and "test accuracy 99.6%" in ax.get_title()


def test_misclassified_grid_labels_each_digit(tmp_path):
    x, y = load_digits()
    images = x.numpy()[:11]
    pred = (y.numpy()[:11] + 1) % 10
    fig = demo_figures.misclassified(images, pred, y.numpy()[:11], np.full(11, 0.75), FACTS)
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 11 and len(fig.axes) == 16                          # 2 rows of 8
    for ax, p, t, img in zip(shown, pred, y.numpy()[:11], images):
        assert ax.get_title() == f"predicted {p} (75%)\ntrue {t}"
        assert np.array_equal(ax.images[0].get_array(), img[0])
    demo_figures.save(fig, tmp_path / "m.png")
    assert _png(tmp_path / "m.png")[1] == 1040
    many = demo_figures.misclassified(np.zeros((50, 8, 8)), [1] * 50, [2] * 50, [0.5] * 50, FACTS, limit=40)
    assert sum(1 for ax in many.axes if ax.images) == 40 and "the first 40 of 50" in many.get_suptitle()
    none = demo_figures.misclassified(np.zeros((0, 8, 8)), [], [], [], FACTS)
    assert "no misclassified test digits" in none.get_suptitle()


# -- the command ----------------------------------------------------------------------------------------
def test_demo_short_run_learns_and_writes_its_outputs(tmp_path):
    """A 6-epoch run (the full run is 20) already classifies >= 93% of the held-out digits; the
    checkpoint reloads into the same architecture and gives the reported test accuracy."""
    out = tmp_path / "run"
    r = runner.invoke(app, ["demo", "--epochs", "6", "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, (r.output, r.exception)
    assert "epoch 6/6" in r.output and "test accuracy: " in r.output
    for line in r.output.splitlines():
        if not line.startswith(("wrote to", "TensorBoard logs:")):         # these name tmp_path
            assert len(line) <= 80, line
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test_acc"] >= 0.93, metrics["test_acc"]
    assert metrics["split"] == {"train": 1257, "val": 270, "test": 270}
    assert len(metrics["history"]["val_acc"]) == 6 and metrics["epochs"] == 6
    assert f"test accuracy: {metrics['test_acc']:.1%} (270 images)" in r.output
    assert _png(out / "curves.png") == (420, 1000) and _png(out / "confusion.png") == (560, 560)
    assert _png(out / "misclassified.png")[0] > 100
    counts = np.array(metrics["confusion_matrix"])
    assert counts.sum() == 270 and np.trace(counts) / 270 == pytest.approx(metrics["test_acc"])
    assert len(metrics["misclassified"]) == 270 - np.trace(counts)

    model = demo_mod.build_model(tensorplug.nn)
    model.load_state_dict(tensorplug.load(out / "model.tpl"))
    x, y = load_digits()
    split = tensorplug.utils.data.random_split(range(1797), list(demo_mod.SPLIT),
                                               generator=tensorplug.Generator().manual_seed(0))
    idx = tensorplug.tensor(list(split[2].indices))
    model.eval()
    with tensorplug.no_grad():
        predicted = model(x[idx]).argmax(1)
    acc = (predicted == y[idx]).float().mean().item()
    assert acc == pytest.approx(metrics["test_acc"])
    expected = np.zeros((10, 10), dtype=int)
    for t, p in zip(y[idx].numpy(), predicted.numpy()):
        expected[t, p] += 1
    assert counts.tolist() == expected.tolist()
    assert metrics["misclassified"] == np.flatnonzero(predicted.numpy() != y[idx].numpy()).tolist()
    _check_tensorboard_logs(out, metrics, r.output)


def _check_tensorboard_logs(out, metrics, output):
    """One run folder under <out>/tensorboard: the per-epoch scalars equal metrics.json's history,
    the confusion matrix is an image, the facts a text, and the printed command names the folder."""
    pytest.importorskip("tensorboard", reason="the tensorboard package is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    (run,) = glob.glob(str(out / "tensorboard" / "*"))
    assert glob.glob(os.path.join(run, "events.out.tfevents.*"))
    acc = EventAccumulator(run, size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    hist, epochs = metrics["history"], list(range(1, metrics["epochs"] + 1))
    for tag, key in (("Loss/train", "train_loss"), ("Loss/validation", "val_loss"),
                     ("Accuracy/train", "train_acc"), ("Accuracy/validation", "val_acc")):
        events = acc.Scalars(tag)
        assert [e.step for e in events] == epochs
        np.testing.assert_allclose([e.value for e in events], hist[key], rtol=1e-6)
    (image,) = acc.Images("test/confusion_matrix")
    assert image.width > 100 and image.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"
    assert "run/text_summary" in acc.Tags()["tensors"]
    assert f"--logdir {out / 'tensorboard'}" in output


def test_demo_runs_without_tensorboard_and_says_how_to_install_it(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "tensorboard" or m.startswith(("tensorboard.",
                                                                              "tensorplug.utils.tensorboard"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)          # `import tensorboard` fails
    r = runner.invoke(app, ["demo", "--epochs", "1", "--out", str(tmp_path), "--no-progress"])
    assert r.exit_code == 0, (r.output, r.exception)
    from tensorplug.utils.collect_env import pip_install_command
    assert f"no TensorBoard logs: the tensorboard package is not installed; install it with " \
           f"`{pip_install_command('tensorboard')}`" in r.output
    assert not (tmp_path / "tensorboard").exists() or not list((tmp_path / "tensorboard").rglob("events.*"))
    assert (tmp_path / "curves.png").exists() and (tmp_path / "metrics.json").exists()


def test_demo_full_run_reaches_95_percent_within_a_minute(tmp_path):
    """The README's command (`python -m tensorplug demo`, 20 epochs) reaches >= 95% test accuracy
    in under 60 s. Run without the numba loops: the README's demo install (".[tensorboard]") has no
    numba, and the loops' float32 sums round the losses' last printed digit differently."""
    env = dict(os.environ, TENSORPLUG_NUMBA="0")
    r = subprocess.run([sys.executable, "-m", "tensorplug", "demo", "--out", str(tmp_path), "--no-progress"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["test_acc"] >= 0.95, r.stdout
    assert metrics["seconds"] < 60, r.stdout
    lines = r.stdout.strip().splitlines()
    assert lines[-1].startswith("test accuracy: ")
    # the README shows this output: its lines are the program's, up to the times
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    shown = readme.split("$ tensorplug demo\n", 1)[1].split("```", 1)[0].splitlines()
    untimed = [re.sub(r"\d+\.\d s$", "", ln) for ln in lines]
    from tensorplug.cli.demo_log import tensorboard_command
    for line in shown:
        if line != "...":
            line = line.replace("tensorboard --logdir demo-output/tensorboard",
                                tensorboard_command(tmp_path / "tensorboard"))    # PATH decides its form
            assert re.sub(r"\d+\.\d s$", "", line).replace("demo-output", str(tmp_path)) in untimed, line


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
    """--threads limits NumPy's BLAS pool inside the run (as threadpoolctl sees it) and restores it."""
    from threadpoolctl import threadpool_info

    def blas():
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    before = blas()
    if not before:
        pytest.skip("NumPy uses no BLAS library that threadpoolctl finds here")
    with demo_mod.blas_threads(1):
        assert blas() == [1] * len(before)
    assert blas() == [max(before)] * len(before)


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
