"""`tensorplug demo`: train a small CNN on the handwritten digits that ship with tensorplug.

The five parts of a training program: data (the 1,797 8x8 UCI digits that ship with tensorplug, read
through `tensorplug.vision.datasets.Digits`, split train / validation / test), model (two conv + max-pool blocks and two linear layers), loss (cross
entropy), optimizer (Adam), and the loop (a progress bar with loss and accuracy per epoch). The run
keeps the weights of the epoch with the best validation accuracy, measures the test accuracy once
at the end, and writes to --out:

    curves.png         train / validation loss and accuracy per epoch, the best epoch marked
    confusion.png      the confusion matrix of the test set
    misclassified.png  the test digits the model got wrong, with predicted and true labels
    model.tpl          the trained model's state_dict (tensorplug.save; load with tensorplug.load)
    metrics.json       the per-epoch history, split sizes, test accuracy, time, device and backend
    tensorboard/       TensorBoard logs (SummaryWriter; needs the tensorboard package)

The pictures are drawn by cli/demo_figures.py (matplotlib), the logs written by cli/demo_log.py.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

import typer

EXIT_USAGE, EXIT_UNAVAILABLE = 2, 3
SPLIT = (1257, 270, 270)        # train, validation, test (of 1,797)


def build_model(nn):
    """The demo's CNN for 1x8x8 inputs (53,002 parameters)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),       # 32 x 4 x 4
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),      # 64 x 2 x 2
        nn.Flatten(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def _evaluate(torch, F, model, x, y):
    """(mean loss, accuracy) of `model` on the whole of x, y (no gradients, eval mode)."""
    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y).item()
        acc = (logits.argmax(1) == y).float().mean().item()
    model.train()
    return loss, acc


@contextlib.contextmanager
def blas_threads(n):
    """Run the block with at most `n` CPU kernel threads (tensorplug.set_num_threads: NumPy's BLAS and
    OpenMP pools), then restore the old count; n < 1 leaves the configuration alone.
    The demo's matrices are tiny: on a busy 2-core machine, OpenBLAS threads spinning against other
    processes made an epoch up to ten times slower than one thread."""
    if not n or n < 1:
        yield
        return
    import tensorplug as torch
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


class _Progress:
    """A rich progress bar (one tick per batch) with an echo of every epoch's numbers; plain lines
    when rich is missing or `enabled` is False."""

    def __init__(self, total, enabled=True):
        self.bar = None
        if enabled and sys.stdout.isatty():        # a pipe or a file gets the epoch lines only
            try:
                from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                           TimeElapsedColumn)
            except ImportError:  # pragma: no cover - typer normally brings rich
                pass
            else:
                self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=16),
                                    MofNCompleteColumn(),
                                    TextColumn("loss {task.fields[loss]:.4f} acc {task.fields[acc]} "
                                               "val acc {task.fields[val_acc]}"),
                                    TimeElapsedColumn())
                self.task = self.bar.add_task("epoch", total=total, loss=math.nan, acc="-", val_acc="-")

    def __enter__(self):
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()

    def step(self, description, **fields):
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=description, **fields)

    def set(self, **fields):
        if self.bar is not None:
            self.bar.update(self.task, **fields)

    def echo(self, line):
        if self.bar is not None:
            self.bar.console.print(line, highlight=False, markup=False, soft_wrap=True)
        else:
            typer.echo(line)


def run_demo(device: str = "cpu", epochs: int = 20, out: str | os.PathLike = "demo-output", *,
             batch_size: int = 64, lr: float = 5e-3, seed: int = 0, progress: bool = True) -> dict:
    """Train, evaluate and write the outputs; returns the metrics dict (also in metrics.json)."""
    import numpy as np

    import tensorplug as torch
    import tensorplug.nn.functional as F
    from tensorplug import nn
    from tensorplug.utils.data import DataLoader, TensorDataset, random_split
    from tensorplug.vision.datasets import Digits

    from . import demo_figures
    from .demo_log import DemoLog, tensorboard_command

    start = time.perf_counter()
    torch.manual_seed(seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    # 1. data: all 1,797 images (uint8 0..16), pixels scaled to [0, 1], a fixed random split
    digits = Digits(train=None)
    images, labels = (digits.data.float() / 16).unsqueeze(1), digits.targets
    split = random_split(TensorDataset(images, labels), list(SPLIT), generator=torch.Generator().manual_seed(seed))
    train_set, val_set, test_set = split

    def whole(subset):
        idx = torch.tensor(list(subset.indices), dtype=torch.int64)
        return images[idx].to(device), labels[idx].to(device)

    x_val, y_val = whole(val_set)
    x_test, y_test = whole(test_set)
    loader = DataLoader(train_set, batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(seed + 1))

    # 2. model, 3. loss, 4. optimizer
    model = build_model(nn).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)   # lr -> 0 at the end
    n_params = sum(p.numel() for p in model.parameters())
    backend = getattr(x_val, "backend", None)
    typer.echo(f"tensorplug demo: a CNN ({n_params:,} parameters) on the UCI handwritten digits (8x8)")
    typer.echo(f"train {SPLIT[0]}, validation {SPLIT[1]}, test {SPLIT[2]}; device {device}, "
               f"backend {getattr(backend, 'name', backend)}, {epochs} epochs")
    log = DemoLog(out / "tensorboard" / time.strftime("%Y%m%d-%H%M%S"))     # a run of its own each time

    # 5. the loop
    history = {"train_loss": [], "train_acc": [], "val_loss": [], "val_acc": [], "seconds": []}
    best = (-1.0, 0, None)          # (validation accuracy, epoch, state_dict copy)
    with _Progress(epochs * len(loader), enabled=progress) as bar:
        for epoch in range(1, epochs + 1):
            t0, epoch_lr = time.perf_counter(), optimizer.param_groups[0]["lr"]
            total_loss, correct, seen = 0.0, 0, 0
            for xb, yb in loader:
                xb, yb = xb.to(device), yb.to(device)
                optimizer.zero_grad()
                logits = model(xb)
                loss = criterion(logits, yb)
                loss.backward()
                optimizer.step()
                n = yb.shape[0]
                total_loss += loss.item() * n
                correct += int((logits.argmax(1) == yb).sum().item())
                seen += n
                bar.step(f"epoch {epoch}/{epochs}", loss=total_loss / seen, acc=f"{correct / seen:.1%}")
            scheduler.step()
            val_loss, val_acc = _evaluate(torch, F, model, x_val, y_val)
            history["train_loss"].append(total_loss / seen)
            history["train_acc"].append(correct / seen)
            history["val_loss"].append(val_loss)
            history["val_acc"].append(val_acc)
            history["seconds"].append(time.perf_counter() - t0)
            bar.set(val_acc=f"{val_acc:.1%}")
            bar.echo(f"epoch {epoch:>{len(str(epochs))}}/{epochs}  train loss {total_loss / seen:.4f} "
                     f"acc {correct / seen:6.1%}  val loss {val_loss:.4f} acc {val_acc:6.1%}  "
                     f"{history['seconds'][-1]:.1f} s")                       # < 80 columns
            log.epoch(epoch, history, epoch_lr)
            if val_acc > best[0]:
                best = (val_acc, epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})

    # keep the weights of the best validation epoch, then look at the test set once
    if best[2] is not None:
        model.load_state_dict(best[2])
    test_loss, test_acc = _evaluate(torch, F, model, x_test, y_test)
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        confidence, predicted = F.softmax(model(x_test), 1).max(1)
    confidence, predicted = confidence.to("cpu").numpy(), predicted.to("cpu").numpy()
    true = y_test.to("cpu").numpy()

    torch.save(model.state_dict(), out / "model.tpl")
    facts = {"backend": getattr(backend, "name", str(backend)), "device": str(device), "test_acc": test_acc,
             "test_images": SPLIT[2]}
    counts = demo_figures.confusion_matrix(predicted, true)
    wrong = np.flatnonzero(predicted != true)
    confusion = demo_figures.confusion(counts, facts)
    for name, fig in (("curves.png", demo_figures.curves(history, best[1], facts)), ("confusion.png", confusion),
                      ("misclassified.png", demo_figures.misclassified(
                          x_test.to("cpu").numpy()[wrong], predicted[wrong], true[wrong], confidence[wrong], facts))):
        demo_figures.save(fig, out / name)
    metrics = {
        "dataset": "UCI optical recognition of handwritten digits (test set), 8x8, tensorplug.vision.datasets.Digits",
        "split": dict(zip(("train", "val", "test"), SPLIT)), "seed": seed, "device": str(device),
        "backend": getattr(backend, "name", str(backend)), "epochs": epochs, "batch_size": batch_size,
        "lr": lr, "optimizer": "Adam", "lr_schedule": "cosine annealing to 0 over the epochs",
        "parameters": n_params, "model": repr(model),
        "history": history, "best_epoch": best[1], "best_val_acc": best[0],
        "test_loss": test_loss, "test_acc": test_acc, "test_images": SPLIT[2], "seconds": seconds,
        "numpy": np.__version__, "python": sys.version.split()[0],
        "confusion_matrix": counts.tolist(), "misclassified": [int(i) for i in wrong],
        "files": {"curves": "curves.png", "confusion": "confusion.png", "misclassified": "misclassified.png",
                  "checkpoint": "model.tpl", "metrics": "metrics.json",
                  "tensorboard": None if log.writer is None else str(log.log_dir)},
    }
    log.finish(metrics, confusion)
    with open(out / "metrics.json", "w") as f:
        json.dump(metrics, f, indent=2)
    typer.echo(f"best validation accuracy {best[0]:.1%} at epoch {best[1]}")
    typer.echo(f"wrote to {out}:\n  curves.png, confusion.png, misclassified.png, model.tpl, metrics.json")
    if log.reason is None:
        typer.echo(f"TensorBoard logs: {tensorboard_command(out / 'tensorboard')}")
    else:
        typer.echo(f"no TensorBoard logs: {log.reason}")
    typer.echo(f"test accuracy: {test_acc:.1%} ({SPLIT[2]} images), {seconds:.1f} s")
    return metrics


def demo(device: str = typer.Option("cpu", "--device", metavar="DEVICE", help="Device to train on (cpu, cuda, cuda:1, ...)."),
         epochs: int = typer.Option(20, "--epochs", min=1, metavar="N", help="Passes over the training images."),
         out: Path = typer.Option(Path("demo-output"), "--out", metavar="DIR",
                                  help="Folder for the pictures, model.tpl, metrics.json and the TensorBoard "
                                       "logs (created if missing)."),
         seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the split, the initial weights and the shuffling."),
         threads: int = typer.Option(1, "--threads", metavar="N", help="BLAS threads (0: leave as configured). One is "
                                                            "fastest for this small model."),
         no_progress: bool = typer.Option(False, "--no-progress", help="Plain lines instead of a progress bar.")):
    """Train a small CNN on the handwritten digits that ship with tensorplug.

    The 1,797 8x8 digits of the UCI optical recognition set: a progress bar per epoch, the loss and
    accuracy curves, the confusion matrix and the misclassified digits as PNGs, TensorBoard logs, a
    checkpoint, and the test accuracy on a held-out split."""
    import tensorplug as torch
    try:
        torch.zeros(1, device=device)
    except RuntimeError as e:
        msg = str(e)
        unknown = "Invalid device" in msg or "known device types" in msg
        typer.echo(f"Error: device {device!r}: {msg}", err=True)
        raise typer.Exit(EXIT_USAGE if unknown else EXIT_UNAVAILABLE)
    with blas_threads(threads):
        run_demo(device, epochs, out, seed=seed, progress=not no_progress)
