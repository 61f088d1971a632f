"""The demo's pictures, drawn with matplotlib (imported here, on first use, without pyplot: no
window, no global backend switch): the loss and accuracy curves, the confusion matrix of the test
set, and the misclassified test digits.

Each function returns a matplotlib Figure; `save(fig, path)` writes it as a PNG.
"""
from __future__ import annotations

import numpy as np

TRAIN, VAL, BEST = "#1f77b4", "#ff7f0e", "#2ca02c"


def _figure(width, height):
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def facts_line(facts: dict) -> str:
    """'backend numpy, device cpu, test accuracy 99.6% (270 images)'."""
    return (f"backend {facts['backend']}, device {facts['device']}, "
            f"test accuracy {facts['test_acc']:.1%} ({facts['test_images']} images)")


def curves(history: dict, best_epoch: int, facts: dict):
    """Loss (left) and accuracy (right) per epoch for the training and validation images, the
    epoch whose weights were kept marked in both."""
    from matplotlib.ticker import MaxNLocator, PercentFormatter
    fig = _figure(10, 4.2)
    fig.suptitle(f"tensorplug demo: a CNN on the UCI handwritten digits\n{facts_line(facts)}", fontsize=12)
    epochs = np.arange(1, len(history["train_loss"]) + 1)
    loss_ax, acc_ax = fig.subplots(1, 2)
    for ax, key, label in ((loss_ax, "loss", "cross-entropy loss"), (acc_ax, "acc", "accuracy")):
        ax.plot(epochs, history[f"train_{key}"], "o-", color=TRAIN, ms=3, lw=1.5, label="training")
        ax.plot(epochs, history[f"val_{key}"], "s-", color=VAL, ms=3, lw=1.5, label="validation")
        ax.axvline(best_epoch, color=BEST, ls="--", lw=1, label=f"epoch kept ({best_epoch})")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    loss_ax.set_yscale("log")
    loss_ax.set_title("loss")
    best_acc = history["val_acc"][best_epoch - 1]
    acc_ax.plot([best_epoch], [best_acc], "*", color=BEST, ms=13, zorder=5,
                label=f"best validation: {best_acc:.1%}")
    acc_ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    acc_ax.set_ylim(min(min(history["train_acc"]), min(history["val_acc"])) - 0.03, 1.01)
    acc_ax.set_title("accuracy")
    loss_ax.legend(loc="upper right", fontsize=9)
    acc_ax.legend(loc="lower right", fontsize=9)
    return fig


def confusion_matrix(predicted, true, classes: int = 10) -> np.ndarray:
    """counts[t, p]: how many images of class t were predicted as p."""
    counts = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(counts, (np.asarray(true), np.asarray(predicted)), 1)
    return counts


def confusion(counts: np.ndarray, facts: dict):
    """The confusion matrix with its counts written in the cells; the diagonal is right."""
    from matplotlib.colors import LogNorm
    n = counts.shape[0]
    fig = _figure(5.6, 5.6)
    ax = fig.subplots()
    # a log scale, so that a single mistake is a visible tint, not white
    ax.imshow(np.maximum(counts, 0.8), cmap="Blues", norm=LogNorm(vmin=0.8, vmax=max(counts.max(), 1)))
    for t in range(n):
        for p in range(n):
            if counts[t, p]:
                dark = counts[t, p] > counts.max() ** 0.5
                ax.text(p, t, str(counts[t, p]), ha="center", va="center", fontsize=10,
                        color="white" if dark else ("#c00000" if t != p else "black"),
                        fontweight="bold" if t != p else "normal")
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xlabel("predicted digit")
    ax.set_ylabel("true digit")
    wrong = int(counts.sum() - np.trace(counts))
    ax.set_title(f"confusion matrix of the test set: {wrong} of {int(counts.sum())} wrong\n{facts_line(facts)}",
                 fontsize=10)
    return fig


def misclassified(images: np.ndarray, predicted, true, confidence, facts: dict, limit: int = 40):
    """The test digits the model got wrong (at most `limit`), each titled with the predicted and the
    true digit and the model's probability for its prediction."""
    images = np.asarray(images).reshape(len(images), *np.asarray(images).shape[-2:])
    k = min(len(images), limit)
    cols = max(1, min(k, 8))
    rows = max(1, -(-k // cols))
    fig = _figure(max(1.3 * cols, 5.6), 1.6 * rows + 0.8 if k else 0.8)
    if k == 0:
        fig.suptitle(f"no misclassified test digits\n{facts_line(facts)}", fontsize=10)
        return fig
    more = f" (the first {k} of {len(images)})" if len(images) > k else ""
    fig.suptitle(f"misclassified test digits{more}\n{facts_line(facts)}", fontsize=10)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax in axes:
        ax.set_axis_off()
    for ax, img, p, t, c in zip(axes, images[:k], predicted, true, confidence):
        ax.imshow(img, cmap="gray_r", interpolation="nearest", vmin=0, vmax=1)
        ax.set_title(f"predicted {int(p)} ({c:.0%})\ntrue {int(t)}", fontsize=8, color="#c00000")
    return fig


def save(fig, path) -> None:
    fig.savefig(path, dpi=100)
