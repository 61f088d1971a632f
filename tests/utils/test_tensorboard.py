"""tensorplug.utils.tensorboard.SummaryWriter: every method writes real event files, read back with
TensorBoard's own readers (EventAccumulator, the event file loaders) and checked value by value;
the default log_dir, and the errors when tensorboard, Pillow or matplotlib are missing."""
import glob
import importlib
import io
import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta

import numpy as np
import pytest

import tensorplug as torch



def _importable(name):
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


HAVE_TB, HAVE_PIL, HAVE_MPL = _importable("tensorboard"), _importable("PIL"), _importable("matplotlib")
needs_tb = pytest.mark.skipif(not HAVE_TB, reason="tensorboard is not installed (pip install -e '.[tensorboard]')")
needs_pil = pytest.mark.skipif(not (HAVE_TB and HAVE_PIL), reason="tensorboard and Pillow are needed "
                                                                 "(pip install -e '.[tensorboard]')")


def _writer(*args, **kwargs):
    from tensorplug.utils.tensorboard import SummaryWriter
    return SummaryWriter(*args, **kwargs)


def _acc(path):
    from tensorboard.backend.event_processing import event_accumulator as ea
    acc = ea.EventAccumulator(str(path), size_guidance={k: 0 for k in ea.DEFAULT_SIZE_GUIDANCE})
    acc.Reload()
    return acc


def _events(path):
    """Every Event proto of the event files directly in `path`, as written (no data migration)."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    files = sorted(glob.glob(os.path.join(str(path), "events.out.tfevents.*")))
    return [ev for f in files for ev in LegacyEventFileLoader(f).Load()]


def _decode(encoded):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(encoded)))


def _image(path, tag):
    (ev,) = _acc(path).Images(tag)
    return ev, _decode(ev.encoded_image_string)


# -- scalars -----------------------------------------------------------------------------------------
@needs_tb
def test_scalars_steps_values_and_wall_times(tmp_path):
    """Tensors, 1-element tensors/arrays, NumPy and Python numbers; the proto keeps float32."""
    values = [torch.tensor(0.25), torch.tensor([1.5]), np.float64(-2.0), 3, np.array([[4.125]]), True]
    with _writer(tmp_path) as w:
        for step, v in enumerate(values):
            w.add_scalar("loss", v, global_step=step * 10, walltime=1000.0 + step)
        w.add_scalar("nostep", torch.tensor(1.0 / 3), walltime=5.0)
        w.add_scalar("grad", torch.ones(1).requires_grad_(), 1, walltime=6.0)
    acc = _acc(tmp_path)
    got = acc.Scalars("loss")
    assert [e.step for e in got] == [0, 10, 20, 30, 40, 50]
    assert [e.wall_time for e in got] == [1000.0 + i for i in range(6)]
    assert [e.value for e in got] == [0.25, 1.5, -2.0, 3.0, 4.125, 1.0]
    (e,) = acc.Scalars("nostep")
    assert (e.step, e.wall_time, e.value) == (0, 5.0, float(np.float32(1.0 / 3)))
    assert acc.Scalars("grad")[0].value == 1.0


@needs_tb
def test_scalar_new_style_and_double_precision(tmp_path):
    """new_style writes a scalars-plugin tensor: float32, or float64 with double_precision."""
    x = 0.1
    with _writer(tmp_path) as w:
        w.add_scalar("f32", x, 1, walltime=1.0, new_style=True)
        w.add_scalar("f64", torch.tensor(x, dtype=torch.float64), 2, walltime=2.0, new_style=True,
                     double_precision=True)
    summaries = {v.tag: (ev, v) for ev in _events(tmp_path) for v in ev.summary.value}
    ev, v = summaries["f32"]
    assert (ev.step, v.metadata.plugin_data.plugin_name, v.tensor.dtype) == (1, "scalars", 1)  # DT_FLOAT
    assert list(v.tensor.float_val) == [float(np.float32(x))]
    ev, v = summaries["f64"]
    assert v.tensor.dtype == 2 and list(v.tensor.double_val) == [x]                  # DT_DOUBLE, exact
    assert _acc(tmp_path).Tensors("f64")[0].tensor_proto.double_val[0] == x


@needs_tb
def test_scalar_bad_values(tmp_path):
    with _writer(tmp_path) as w:
        with pytest.raises(AssertionError, match="one element"):
            w.add_scalar("x", torch.tensor([1.0, 2.0]))
        with pytest.raises(NotImplementedError, match="numpy array or tensorplug tensor"):
            w.add_scalar("x", [1.0])


@needs_tb
def test_add_scalars_writes_one_subfolder_per_key(tmp_path):
    """Each key is a run `<logdir>/<main_tag, / as _>_<key>` holding tag main_tag; one wall time per call."""
    with _writer(tmp_path) as w:
        for step in range(3):
            w.add_scalars("train/loss", {"a": step, "b": torch.tensor(10.0 * step)}, step, walltime=50.0 + step)
        w.add_scalars("train/loss", {"c": np.float32(7.5)}, 9)
    subdirs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert subdirs == ["train_loss_a", "train_loss_b", "train_loss_c"]
    for key, scale in (("a", 1.0), ("b", 10.0)):
        acc = _acc(tmp_path / f"train_loss_{key}")
        assert acc.Tags()["scalars"] == ["train/loss"]
        got = acc.Scalars("train/loss")
        assert [(e.step, e.wall_time, e.value) for e in got] == [(s, 50.0 + s, scale * s) for s in range(3)]
    (e,) = _acc(tmp_path / "train_loss_c").Scalars("train/loss")
    assert (e.step, e.value) == (9, 7.5) and abs(e.wall_time - time.time()) < 60
    assert _acc(tmp_path).Tags()["scalars"] == []           # nothing in the main run itself


# -- histograms ---------------------------------------------------------------------------------------
def _trimmed(counts, limits):
    """Expected TensorBoard buckets: from one bucket left of the first non-empty one (an empty one at
    the far left if needed) to the last non-empty one; limits are right edges."""
    nz = np.flatnonzero(counts)
    lo, hi = nz[0], nz[-1]
    if lo == 0:
        return [0] + list(counts[:hi + 1]), list(limits[:hi + 2])
    return list(counts[lo - 1:hi + 1]), list(limits[lo:hi + 2])


def _histo(path, tag):
    (ev,) = _acc(path).Histograms(tag)
    return ev.histogram_value


@needs_tb
def test_histogram_tensorflow_bins_match_numpy(tmp_path):
    """Default bins: 0 and +-1e-12 * 1.1**k below 1e20 (built by repeated multiplication)."""
    rng = np.random.default_rng(0)
    vals = rng.normal(scale=3.0, size=(40, 25))
    with _writer(tmp_path) as w:
        w.add_histogram("w", torch.tensor(vals), 4, walltime=3.0)
        assert len(w.default_bins) == 2 * 774 + 1
    pos = np.cumprod(np.r_[1e-12, np.full(800, 1.1)])
    pos = pos[pos < 1e20]
    edges = np.r_[-pos[::-1], 0.0, pos]
    counts, limits = np.histogram(vals.ravel(), bins=edges)
    want_counts, want_limits = _trimmed(counts, limits)
    h = _histo(tmp_path, "w")
    assert h.bucket == want_counts and h.bucket_limit == want_limits
    flat = vals.ravel()
    assert (h.min, h.max, h.num) == (flat.min(), flat.max(), 1000)
    assert h.sum == pytest.approx(flat.sum(), rel=1e-12) and h.sum_squares == pytest.approx(flat @ flat, rel=1e-12)


@needs_tb
@pytest.mark.parametrize("bins", ["auto", "fd", "sturges", 7])
def test_histogram_numpy_bins(tmp_path, bins):
    vals = np.random.default_rng(1).exponential(size=500).astype(np.float32)
    with _writer(tmp_path) as w:
        w.add_histogram("h", vals, 0, bins=bins)
    counts, limits = np.histogram(vals.astype(np.float64), bins=bins)
    want_counts, want_limits = _trimmed(counts, limits)
    h = _histo(tmp_path, "h")
    assert h.bucket == want_counts and h.bucket_limit == want_limits


@needs_tb
def test_histogram_layout_exact(tmp_path):
    """Hand-computed buckets: trimming on both sides, the empty left bucket, max_bins merging."""
    with _writer(tmp_path) as w:
        w.add_histogram("left", np.array([0.5, 0.5, 2.5]), 0, bins=[0, 1, 2, 3, 4])
        w.add_histogram("inner", np.array([2.5, 3.5]), 0, bins=[0, 1, 2, 3, 4])
        w.add_histogram("merge2", np.arange(10) + 0.5, 0, bins=np.arange(11), max_bins=5)
        w.add_histogram("merge3", np.arange(10) + 0.5, 0, bins=np.arange(11), max_bins=3)
    h = _histo(tmp_path, "left")
    assert (h.bucket, h.bucket_limit) == ([0, 2, 0, 1], [0, 1, 2, 3])
    h = _histo(tmp_path, "inner")
    assert (h.bucket, h.bucket_limit) == ([0, 1, 1], [2, 3, 4])
    h = _histo(tmp_path, "merge2")
    assert (h.bucket, h.bucket_limit) == ([0, 2, 2, 2, 2, 2], [0, 2, 4, 6, 8, 10])
    h = _histo(tmp_path, "merge3")                          # 10 bins in 3s, the last padded
    assert (h.bucket, h.bucket_limit) == ([0, 3, 3, 3, 1], [0, 3, 6, 9, 10])
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (0.5, 9.5, 10, 50.0, float(np.sum((np.arange(10) + .5) ** 2)))


@needs_tb
def test_histogram_raw_and_errors(tmp_path):
    with _writer(tmp_path) as w:
        w.add_histogram_raw("raw", 0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 2, 1], global_step=2)
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("e", np.array([]))
        with pytest.raises(ValueError, match="inside the histogram's bins"):
            w.add_histogram("nan", np.array([np.nan, np.nan]))
        with pytest.raises(ValueError, match="len\\(bucket_limits\\)"):
            w.add_histogram_raw("bad", 0, 1, 1, 1, 1, [1.0], [1, 2])
    h = _histo(tmp_path, "raw")
    assert (h.min, h.max, h.num, h.sum, h.sum_squares, h.bucket_limit, h.bucket) == (
        0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 2, 1])


# -- images -------------------------------------------------------------------------------------------
def _u8(x):
    """PyTorch's conversion: uint8 as is, else x * 255 in float32, clipped, truncated."""
    x = np.asarray(x)
    return x if x.dtype == np.uint8 else (x.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


@needs_pil
def test_add_image_pixels_in_every_layout(tmp_path):
    rng = np.random.default_rng(2)
    chw = rng.random((3, 5, 7)) * 1.2 - 0.1                 # out of [0, 1] on both sides: clipped
    hwc_u8 = rng.integers(0, 256, (6, 4, 3), dtype=np.uint8)
    rgba = rng.integers(0, 256, (3, 5, 4), dtype=np.uint8)
    gray = rng.random((4, 6)).astype(np.float32)
    with _writer(tmp_path) as w:
        w.add_image("chw", torch.tensor(chw, dtype=torch.float32), 3, walltime=9.0)
        w.add_image("hwc_u8", hwc_u8, 0, dataformats="HWC")
        w.add_image("rgba", rgba, 0, dataformats="HWC")
        w.add_image("hw", gray, 0, dataformats="HW")
        w.add_image("wh", gray, 0, dataformats="WH")
        w.add_image("c1hw", torch.tensor(gray[None]), 0)
    ev, px = _image(tmp_path, "chw")
    assert (ev.step, ev.wall_time, ev.width, ev.height) == (3, 9.0, 7, 5)
    np.testing.assert_array_equal(px, _u8(chw.astype(np.float32)).transpose(1, 2, 0))
    _, px = _image(tmp_path, "hwc_u8")
    np.testing.assert_array_equal(px, hwc_u8)
    ev, px = _image(tmp_path, "rgba")
    assert px.shape == (3, 5, 4)
    np.testing.assert_array_equal(px, rgba)
    for tag, want in (("hw", gray), ("wh", gray.T), ("c1hw", gray)):
        _, px = _image(tmp_path, tag)
        np.testing.assert_array_equal(px, np.repeat(_u8(want)[:, :, None], 3, axis=2))
    colorspaces = {v.tag: v.image.colorspace for ev in _events(tmp_path) for v in ev.summary.value}
    assert colorspaces == {"chw": 3, "hwc_u8": 3, "rgba": 4, "hw": 3, "wh": 3, "c1hw": 3}


@needs_pil
def test_add_images_grid(tmp_path):
    """A batch is tiled 8 per row, row by row; the cells after the last image are black."""
    rng = np.random.default_rng(3)
    batch = rng.random((11, 3, 4, 5)).astype(np.float32)
    small = rng.integers(0, 256, (3, 4, 5, 1), dtype=np.uint8)       # NHWC, one channel
    with _writer(tmp_path) as w:
        w.add_images("batch", torch.tensor(batch), 1)
        w.add_images("nhwc", small, 1, dataformats="NHWC")
    _, px = _image(tmp_path, "batch")
    assert px.shape == (2 * 4, 8 * 5, 3)
    want = np.zeros((8, 40, 3), np.uint8)
    for i in range(11):
        r, c = divmod(i, 8)
        want[r * 4:(r + 1) * 4, c * 5:(c + 1) * 5] = _u8(batch[i]).transpose(1, 2, 0)
    np.testing.assert_array_equal(px, want)
    _, px = _image(tmp_path, "nhwc")
    assert px.shape == (4, 15, 3)
    np.testing.assert_array_equal(px, np.repeat(np.concatenate(list(small), axis=1), 3, axis=2))


@needs_pil
def test_image_bad_layouts(tmp_path):
    with _writer(tmp_path) as w:
        with pytest.raises(AssertionError, match="different"):
            w.add_image("x", np.zeros((3, 4, 4)), dataformats="HW")
        with pytest.raises(AssertionError, match="same dimension shorthand twice"):
            w.add_image("x", np.zeros((3, 4, 4)), dataformats="CHH")
        with pytest.raises(ValueError, match="1, 3 or 4 channels"):
            w.add_image("x", np.zeros((2, 4, 4)))
        with pytest.raises(AssertionError, match="1 or 3 channels"):
            w.add_images("x", np.zeros((2, 4, 4, 4)))


@needs_pil
def test_image_without_pillow_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with _writer(tmp_path) as w:
        with pytest.raises(ImportError, match=r'Pillow.*pip install "tensorplug\[tensorboard\]"'):
            w.add_image("x", np.zeros((3, 2, 2)))


@needs_tb
def test_add_figure_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with _writer(tmp_path) as w:
        with pytest.raises(ImportError, match="add_figure requires matplotlib"):
            w.add_figure("f", object())


@needs_pil
@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib is not installed")
def test_add_figure_pixels(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def fig(k):
        f = plt.figure(figsize=(2, 1), dpi=40)
        plt.plot([0, 1], [0, k])
        return f

    def pixels(f):
        canvas = FigureCanvasAgg(f)
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())[:, :, :3]

    one, two = fig(1), fig(2)
    want_one, want_two = pixels(one), pixels(two)
    with _writer(tmp_path) as w:
        w.add_figure("one", one, 0)
        w.add_figure("both", [one, two], 0, close=True)
    np.testing.assert_array_equal(_image(tmp_path, "one")[1], want_one)
    np.testing.assert_array_equal(_image(tmp_path, "both")[1], np.concatenate([want_one, want_two], axis=1))
    assert plt.get_fignums() == []


# -- text, hparams, embeddings -----------------------------------------------------------------------
@needs_tb
def test_add_text(tmp_path):
    with _writer(tmp_path) as w:
        w.add_text("notes", "héllo **world**", 7, walltime=2.0)
    (ev,) = _acc(tmp_path).Tensors("notes/text_summary")
    assert (ev.step, ev.wall_time) == (7, 2.0)
    assert list(ev.tensor_proto.string_val) == ["héllo **world**".encode("utf-8")]
    (v,) = [v for e in _events(tmp_path) for v in e.summary.value]
    assert v.metadata.plugin_data.plugin_name == "text"


def _hparams_data(path):
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData
    out = {}
    for ev in _events(path):
        for v in ev.summary.value:
            if v.metadata.plugin_data.plugin_name == "hparams":
                out[v.tag] = (ev.step, HParamsPluginData.FromString(v.metadata.plugin_data.content))
    return out


@needs_tb
def test_add_hparams_session_protos(tmp_path):
    from tensorboard.plugins.hparams.api_pb2 import DataType, Status
    hp = {"lr": 0.01, "bs": 32, "opt": "adam", "nesterov": True, "t": torch.tensor([0.5]), "skip": None}
    with _writer(tmp_path) as w:
        w.add_hparams(hp, {"hp/acc": 0.75, "hp/loss": torch.tensor(1.5)},
                      hparam_domain_discrete={"opt": ["adam", "sgd"], "bs": [16, 32]}, run_name="run1",
                      global_step=4)
    run = tmp_path / "run1"
    data = _hparams_data(run)
    assert set(data) == {"_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}
    assert {step for step, _ in data.values()} == {4}
    exp = data["_hparams_/experiment"][1].experiment
    types = {i.name: DataType.Name(i.type) for i in exp.hparam_infos}
    assert types == {"lr": "DATA_TYPE_FLOAT64", "bs": "DATA_TYPE_FLOAT64", "opt": "DATA_TYPE_STRING",
                     "nesterov": "DATA_TYPE_FLOAT64", "t": "DATA_TYPE_FLOAT64"}    # bool as a number (PyTorch)
    domains = {i.name: [getattr(x, x.WhichOneof("kind")) for x in i.domain_discrete.values] for i in exp.hparam_infos}
    assert domains["opt"] == ["adam", "sgd"] and domains["bs"] == [16.0, 32.0] and domains["lr"] == []
    assert [m.name.tag for m in exp.metric_infos] == ["hp/acc", "hp/loss"]
    start = data["_hparams_/session_start_info"][1].session_start_info.hparams
    got = {k: getattr(v, v.WhichOneof("kind")) for k, v in start.items()}
    assert got == {"lr": 0.01, "bs": 32.0, "opt": "adam", "nesterov": 1.0, "t": 0.5}
    end = data["_hparams_/session_end_info"][1].session_end_info
    assert Status.Name(end.status) == "STATUS_SUCCESS"
    acc = _acc(run)
    assert [(e.step, e.value) for e in acc.Scalars("hp/acc")] == [(4, 0.75)]
    assert [(e.step, e.value) for e in acc.Scalars("hp/loss")] == [(4, 1.5)]


@needs_tb
def test_add_hparams_default_run_name_and_errors(tmp_path):
    before = time.time()
    with _writer(tmp_path) as w:
        w.add_hparams({"a": 1}, {"m": 2.0})
        with pytest.raises(TypeError, match="should be dictionary"):
            w.add_hparams([("a", 1)], {"m": 1.0})
        with pytest.raises(ValueError, match="one of int, float, str, bool"):
            w.add_hparams({"a": [1, 2]}, {"m": 1.0})
        with pytest.raises(TypeError, match=r"hparam_domain_discrete\[a\]"):
            w.add_hparams({"a": 1}, {"m": 1.0}, hparam_domain_discrete={"a": ["x"]})
    (name,) = [p.name for p in tmp_path.iterdir() if p.is_dir()]
    assert before <= float(name) <= time.time()            # named by str(time.time())


@needs_pil
def test_add_embedding_files(tmp_path):
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    mat = np.random.default_rng(4).random((5, 3))
    imgs = np.random.default_rng(5).random((5, 3, 2, 4)).astype(np.float32)
    with _writer(tmp_path) as w:
        w.add_embedding(torch.tensor(mat), metadata=list("abcde"), label_img=torch.tensor(imgs), global_step=3,
                        tag="feat/x")
        w.add_embedding(mat[:2], metadata=[[1, "p"], [2, "q"]], metadata_header=["id", "name"])
    sub = tmp_path / "00003" / "feat%2fx"
    rows = [[float(x) for x in line.split("\t")] for line in (sub / "tensors.tsv").read_text().splitlines()]
    np.testing.assert_array_equal(np.array(rows), mat)
    assert (sub / "metadata.tsv").read_text() == "a\nb\nc\nd\ne\n"
    assert (tmp_path / "00000" / "default" / "metadata.tsv").read_text() == "id\tname\n1\tp\n2\tq\n"
    sprite = _decode((sub / "sprite.png").read_bytes())
    assert sprite.shape == (12, 12, 3)                     # 3x3 grid of 4-wide images, padded square
    np.testing.assert_array_equal(sprite[:2, :4], _u8(imgs[0]).transpose(1, 2, 0))
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(), ProjectorConfig())
    first, second = config.embeddings
    assert (first.tensor_name, first.tensor_path, first.metadata_path) == (
        "feat/x:00003", "00003/feat%2fx/tensors.tsv", "00003/feat%2fx/metadata.tsv")
    assert first.sprite.image_path == "00003/feat%2fx/sprite.png" and list(first.sprite.single_image_dim) == [4, 2]
    assert (second.tensor_name, second.HasField("sprite")) == ("default:00000", False)


# -- files, log_dir, unsupported methods ----------------------------------------------------------------
@needs_tb
def test_default_log_dir(tmp_path, monkeypatch):
    """runs/<%b%d_%H-%M-%S>_<hostname><comment>, relative to the working directory."""
    monkeypatch.chdir(tmp_path)
    before = datetime.now().replace(microsecond=0)
    w = _writer(comment="_lr0.1")
    after = datetime.now()
    w.close()
    stamps = set()
    t = before
    while t <= after:
        stamps.add(t.strftime("%b%d_%H-%M-%S"))
        t += timedelta(seconds=1)
    assert w.get_logdir() in {os.path.join("runs", s + "_" + socket.gethostname() + "_lr0.1") for s in stamps}
    assert glob.glob(os.path.join(w.get_logdir(), "events.out.tfevents.*"))


@needs_tb
def test_purge_step_suffix_flush_close_and_reopen(tmp_path):
    w = _writer(tmp_path / "run", purge_step=7, flush_secs=10_000, max_queue=1000, filename_suffix=".x")
    assert w.get_logdir() == tmp_path / "run"
    w.add_scalar("a", 1.0, 8)
    w.flush()                                              # on disk without waiting for flush_secs
    (f,) = glob.glob(str(tmp_path / "run" / "events.out.tfevents.*"))
    assert f.endswith(".x")
    evs = _events(tmp_path / "run")
    assert evs[0].file_version == "brain.Event:2"
    assert (evs[1].step, evs[1].file_version) == (7, "brain.Event:2")
    assert (evs[2].step, evs[2].session_log.status) == (7, 1)        # SessionLog.START
    assert evs[3].summary.value[0].simple_value == 1.0
    w.close()
    w.close()                                              # a second close is a no-op
    w.add_scalar("a", 2.0, 9)                              # after close: a new file, no second purge
    w.close()
    assert len(glob.glob(str(tmp_path / "run" / "events.out.tfevents.*"))) == 2
    assert [(e.step, e.value) for e in _acc(tmp_path / "run").Scalars("a")] == [(8, 1.0), (9, 2.0)]


@needs_tb
def test_unsupported_methods_raise(tmp_path):
    with _writer(tmp_path) as w:
        with pytest.raises(NotImplementedError, match="add_graph is not supported"):
            w.add_graph(object(), None)
        with pytest.raises(NotImplementedError, match="add_pr_curve"):
            w.add_pr_curve("pr", np.zeros(3), np.zeros(3))


# -- the optional package -----------------------------------------------------------------------------------
def test_import_without_tensorboard_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "tensorboard" or m.startswith(("tensorboard.",
                                                                               "tensorplug.utils.tensorboard"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)     # `import tensorboard` now fails
    with pytest.raises(ImportError) as info:
        importlib.import_module("tensorplug.utils.tensorboard")
    msg = str(info.value)
    assert "TensorBoard logging requires TensorBoard" in msg
    from tensorplug.utils.collect_env import pip_install_command
    assert pip_install_command("tensorboard") in msg and "[tensorboard]" in msg     # a command for this install


def test_import_tensorplug_does_not_load_tensorboard():
    code = "import sys, tensorplug, tensorplug.utils; print('tensorboard' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
