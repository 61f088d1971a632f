"""The demo's TensorBoard logs, written through `tensorplug.utils.tensorboard.SummaryWriter`
(PyTorch's API): per epoch the training and validation loss and accuracy and the learning rate;
at the end the run's facts as text and hyperparameters, and the test set's confusion matrix.

Without the `tensorboard` package the demo runs all the same; `reason` says what to install.
"""
from __future__ import annotations

import os
import shutil
import sys


def tensorboard_command(log_dir) -> str:
    """`tensorboard --logdir DIR`, runnable as written: the tensorboard next to this Python by its
    full path where the virtual environment is not on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    found = shutil.which("tensorboard")
    if found and os.path.exists(here) and os.path.samefile(found, here):
        exe = "tensorboard"
    elif os.path.exists(here):
        exe = here
    elif found:
        exe = "tensorboard"
    else:
        exe = f"{sys.executable} -m tensorboard.main"
    return f"{exe} --logdir {log_dir}"


class DemoLog:
    """A SummaryWriter on `log_dir`, or nothing (with `reason`) where TensorBoard is missing."""

    def __init__(self, log_dir):
        self.log_dir, self.writer, self.reason = log_dir, None, None
        try:
            from tensorplug.utils.tensorboard import SummaryWriter
            self.writer = SummaryWriter(str(log_dir))
        except ImportError as e:
            missing = isinstance(e, ModuleNotFoundError) or isinstance(e.__cause__, ModuleNotFoundError)
            if missing:                # a pip command that works for this installation (clone or package)
                from tensorplug.utils.collect_env import pip_install_command
                self.reason = ("the tensorboard package is not installed; install it with "
                               f"`{pip_install_command('tensorboard')}`")
            else:
                self.reason = str(e)

    def epoch(self, epoch: int, history: dict, lr: float) -> None:
        if self.writer is None:
            return
        w = self.writer
        w.add_scalar("Loss/train", history["train_loss"][-1], epoch)
        w.add_scalar("Loss/validation", history["val_loss"][-1], epoch)
        w.add_scalar("Accuracy/train", history["train_acc"][-1], epoch)
        w.add_scalar("Accuracy/validation", history["val_acc"][-1], epoch)
        w.add_scalar("learning rate", lr, epoch)

    def finish(self, metrics: dict, confusion_figure=None) -> None:
        if self.writer is None:
            return
        w = self.writer
        facts = {k: metrics[k] for k in ("backend", "device", "epochs", "batch_size", "lr", "seed", "optimizer")}
        w.add_text("run", "  \n".join(f"**{k}**: {v}" for k, v in
                                      {**facts, "parameters": metrics["parameters"],
                                       "best epoch": metrics["best_epoch"],
                                       "test accuracy": f"{metrics['test_acc']:.2%}"}.items()))
        w.add_hparams(facts, {"hparam/test_accuracy": metrics["test_acc"],
                              "hparam/best_validation_accuracy": metrics["best_val_acc"]}, run_name="hparams")
        if confusion_figure is not None:
            try:
                w.add_figure("test/confusion_matrix", confusion_figure, metrics["epochs"], close=False)
            except ImportError as e:    # Pillow encodes the image
                self.reason = str(e)
        w.close()
