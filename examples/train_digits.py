"""Train a CNN on handwritten digits, in the five parts of a training program: data, model, loss
function, optimizer, and the training loop (which watches loss and accuracy, draws their curves
and saves checkpoints it can resume from).

    python examples/train_digits.py --epochs 10 --out runs/digits
    python examples/train_digits.py --epochs 20 --out runs/digits --resume    # continues at epoch 11

After every epoch, <out>/checkpoint.tpl holds the epoch number, the model's, optimizer's and
learning-rate scheduler's state dicts and the history, written with tensorplug.save (PyTorch's file
format, so torch.load reads it too; tensorplug.load's default weights_only=True never runs code). --resume loads it and continues with the next epoch; as
the shuffling of epoch e is seeded with (seed, e), "train 10 epochs, then resume to 20" gives the
same weights as "train 20 epochs" in one go. <out>/best.tpl is the model with the best validation
accuracy, <out>/curves.png the loss and accuracy curves.

The data are the 1,797 8x8 digits of the UCI "Optical Recognition of Handwritten Digits" set that
ship with tensorplug, read as PIL images through tensorplug.vision.datasets.Digits (its fixed split:
1,433 training images, of which 270 are held out here for validation, and 364 test images) and
turned into tensors by transforms.ToTensor(); source and licence in core/data/DIGITS.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import tensorplug as torch
from tensorplug import nn
from tensorplug.utils.data import DataLoader, random_split
from tensorplug.vision import datasets, transforms


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--epochs", type=int, default=20, help="train until this epoch (total, not additional)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default="runs/digits", help="folder for checkpoint.tpl, best.tpl, curves.png")
    p.add_argument("--resume", nargs="?", const="", default=None, metavar="CHECKPOINT",
                   help="continue from CHECKPOINT (default: <out>/checkpoint.tpl)")
    return p.parse_args(argv)


# ---- 2. model ---------------------------------------------------------------------------------------------
class DigitNet(nn.Module):
    """Two convolution blocks (conv, ReLU, 2x2 max pool) and a two-layer classifier for 1x8x8 images."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 32 x 4 x 4
            nn.Conv2d(32, 64, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2))  # 64 x 2 x 2
        self.classifier = nn.Sequential(nn.Linear(64 * 2 * 2, 128), nn.ReLU(), nn.Linear(128, num_classes))
        for m in self.modules():          # initialise the parameters
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def save_curves(path, history):
    """Loss and accuracy per epoch, training and validation, as a PNG (matplotlib, no window)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    epochs = range(1, len(history["train_loss"]) + 1)
    for ax, key, label in zip(fig.subplots(1, 2), ("loss", "acc"), ("cross-entropy loss", "accuracy")):
        ax.plot(epochs, history[f"train_{key}"], "o-", label="training")
        ax.plot(epochs, history[f"val_{key}"], "s-", label="validation")
        ax.set(xlabel="epoch", ylabel=label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.savefig(path)


def evaluate(model, loader, criterion, device):
    """Mean loss and accuracy of `model` over `loader`."""
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total += criterion(logits, y).item() * y.shape[0]
            correct += int((logits.argmax(dim=1) == y).sum().item())
            n += y.shape[0]
    model.train()
    return total / n, correct / n


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)

    # ---- 1. data: read (PIL images), preprocess (ToTensor: pixels -> [0, 1], 1 x 8 x 8), split --------------
    to_tensor = transforms.ToTensor()
    train_val = datasets.Digits(train=True, transform=to_tensor)    # 1,433 images; the fixed test split is apart
    test_set = datasets.Digits(train=False, transform=to_tensor)    # 364 images
    train_set, val_set = random_split(train_val, [1163, 270], generator=torch.Generator().manual_seed(args.seed))
    shuffle = torch.Generator()
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    val_loader = DataLoader(val_set, batch_size=256)
    test_loader = DataLoader(test_set, batch_size=256)

    model = DigitNet().to(args.device)                   # ---- 2. model (above)
    criterion = nn.CrossEntropyLoss()                    # ---- 3. loss function
    # ---- 4. optimizer, and a schedule that halves the learning rate every 5 epochs
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)

    history = {"train_loss": [], "train_acc": [], "val_loss": [], "val_acc": []}
    start_epoch, best_acc = 1, -1.0
    ckpt_path = os.path.join(args.out, "checkpoint.tpl")
    if args.resume is not None:
        path = args.resume or ckpt_path
        ckpt = torch.load(path, map_location=args.device)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        history, best_acc = ckpt["history"], ckpt["best_val_acc"]
        start_epoch = ckpt["epoch"] + 1
        print(f"resumed from {path}: epoch {ckpt['epoch']} done, best validation accuracy {best_acc:.1%}")

    # ---- 5. iterate: train, watch loss / accuracy, draw the curves, save checkpoints ---------------------
    for epoch in range(start_epoch, args.epochs + 1):
        t0 = time.perf_counter()
        shuffle.manual_seed(args.seed * 100_003 + epoch)  # this epoch's order does not depend on earlier ones
        total, correct, n = 0.0, 0, 0
        for x, y in train_loader:
            x, y = x.to(args.device), y.to(args.device)
            logits = model(x)                     # forward
            loss = criterion(logits, y)
            optimizer.zero_grad()                 # backward
            loss.backward()
            optimizer.step()                      # update the parameters
            total += loss.item() * y.shape[0]
            correct += int((logits.argmax(dim=1) == y).sum().item())
            n += y.shape[0]
        scheduler.step()
        val_loss, val_acc = evaluate(model, val_loader, criterion, args.device)
        for key, value in zip(history, (total / n, correct / n, val_loss, val_acc)):
            history[key].append(value)
        print(f"epoch {epoch:3d}/{args.epochs}  lr {scheduler.get_last_lr()[0]:.2e}  "
              f"train loss {total / n:.4f} acc {correct / n:6.1%}  val loss {val_loss:.4f} acc {val_acc:6.1%}  "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        if val_acc > best_acc:
            best_acc = val_acc
            torch.save(model.state_dict(), os.path.join(args.out, "best.tpl"))
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "history": history, "best_val_acc": best_acc,
                    "args": vars(args)}, ckpt_path)
        save_curves(os.path.join(args.out, "curves.png"), history)

    # the test set is looked at once, with the weights of the best validation epoch
    if os.path.exists(os.path.join(args.out, "best.tpl")):
        model.load_state_dict(torch.load(os.path.join(args.out, "best.tpl"), map_location=args.device))
    test_loss, test_acc = evaluate(model, test_loader, criterion, args.device)
    print(f"test loss {test_loss:.4f}, test accuracy {test_acc:.1%} ({len(test_set)} images); "
          f"checkpoint {ckpt_path}, curves {os.path.join(args.out, 'curves.png')}")
    return test_acc


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
