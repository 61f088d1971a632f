"""SummaryWriter (torch.utils.tensorboard.SummaryWriter): summaries into event files of a log
directory, through the `tensorboard` package's EventFileWriter (a queue flushed by a thread every
`flush_secs`, or when `max_queue` events wait).

    w = SummaryWriter()                          # runs/<Mon>DD_HH-MM-SS_<hostname><comment>
    w.add_scalar("loss", 0.5, global_step=1)
    w.add_scalars("lr", {"a": 0.1, "b": 0.2}, 1)  # one sub-folder (run) per key: <logdir>/lr_a, <logdir>/lr_b
    w.close()
"""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as S
from ._embedding import write_embedding
from ._hparams import hparams
from ._image import figure_to_image

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """One event file in `log_dir`: Event / Summary protos stamped with wall time and step."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)      # a tensor or NumPy integer as a Python int for the proto
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        """After close(): write on, into a new event file of the same directory."""
        self.event_writer.reopen()


def _default_logdir(comment=""):
    return os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname() + comment)


class SummaryWriter:
    """Writes scalars, histograms, images, text, hyperparameters, figures and embeddings for TensorBoard.

    log_dir: the directory of the event files (default runs/<Mon>DD_HH-MM-SS_<hostname><comment>;
    `comment` is used only there). purge_step: after a crash at step T+X and a restart at T, events
    at steps >= T in the same log_dir are hidden. max_queue, flush_secs: pending events that force a
    write, and how often the queue is written. filename_suffix: appended to the event file names.

    After close(), the next add_* call opens a new event file in the same log_dir.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        self.log_dir = log_dir if log_dir else _default_logdir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.default_bins = S.tensorflow_bins()
        self.file_writer = self.all_writers = None
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """The writer of log_dir itself, opened again after close()."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # TensorBoard drops the events at steps >= purge_step seen before a session START there
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory the event files are written to."""
        return self.log_dir

    # -- numbers -----------------------------------------------------------------------------------
    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """One number (a Python or NumPy number, or a one-element tensor or array) at global_step."""
        self._get_file_writer().add_summary(S.scalar(tag, scalar_value, new_style, double_precision),
                                            global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several numbers in one chart: each key is a run of its own, the folder
        `<log_dir>/<main_tag with / as _>_<key>`, each holding the tag `main_tag`."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for key, value in tag_scalar_dict.items():
            folder = root + "/" + main_tag.replace("/", "_") + "_" + key
            fw = self.all_writers.get(folder)
            if fw is None:
                fw = self.all_writers[folder] = FileWriter(folder, self.max_queue, self.flush_secs,
                                                           self.filename_suffix)
            fw.add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """A histogram of `values`. bins: 'tensorflow' (TensorBoard's default exponential edges), or
        anything np.histogram takes ('auto', 'fd', a count, explicit edges); max_bins merges buckets."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(S.histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        """A histogram from precomputed statistics; bucket_limits are the buckets' right edges."""
        self._get_file_writer().add_summary(
            S.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
            global_step, walltime)

    # -- pictures and text ---------------------------------------------------------------------------
    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """An image: (3, H, W) by default; dataformats names the layout (CHW, HWC, HW, ...). uint8
        pixels are written as they are, others are read as [0, 1]. Needs Pillow."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images, tiled into one grid image 8 per row (dataformats NCHW, NHWC, ...)."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, as a grid) rendered to an image; close: close the
        figure afterwards. Needs matplotlib."""
        if isinstance(figure, list):
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """A (markdown) string for the text dashboard, under the tag `<tag>/text_summary`."""
        self._get_file_writer().add_summary(S.text(tag, text_string), global_step, walltime)

    # -- hyperparameters, embeddings -----------------------------------------------------------------
    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """One run of the hparams dashboard: the hyperparameters (bool, str, int, float, None) and
        metrics, written to `<log_dir>/<run_name>` (default: the current time.time()), the metrics
        also as scalars there."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in summaries:
                w.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """Points for the projector: mat (N, D), metadata N labels (or rows under metadata_header),
        label_img (N, C, H, W) images in [0, 1]."""
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        write_embedding(self._get_file_writer().get_logdir(), self._projector_config, mat, metadata,
                        label_img, global_step, tag, metadata_header)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        raise NotImplementedError("SummaryWriter.add_graph is not supported by tensorplug: it needs a "
                                  "traced graph of the model (PyTorch uses torch.jit.trace), which "
                                  "tensorplug does not build")

    # -- files -----------------------------------------------------------------------------------------
    def flush(self):
        """Write every pending event of this writer and its add_scalars sub-writers to disk."""
        for fw in (self.all_writers or {}).values():
            fw.flush()

    def close(self):
        """Flush and close every event file; a later add_* call opens new ones."""
        for fw in (self.all_writers or {}).values():
            fw.flush()
            fw.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _unsupported(name):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"SummaryWriter.{name} is not implemented in tensorplug yet")
    method.__name__ = name
    return method


# the rest of PyTorch's SummaryWriter: a clear error instead of an AttributeError
for _name in ("add_tensor", "add_image_with_boxes", "add_video", "add_audio", "add_onnx_graph", "add_pr_curve",
              "add_pr_curve_raw", "add_custom_scalars", "add_custom_scalars_multilinechart",
              "add_custom_scalars_marginchart", "add_mesh"):
    setattr(SummaryWriter, _name, _unsupported(_name))
del _name
