"""Train a CNN on MNIST with tensorplug.vision: datasets.MNIST, transforms, a DataLoader, Adam.

    python examples/train_mnist.py --root data --epochs 2          # reads data/MNIST/raw/*-ubyte[.gz]
    python examples/train_mnist.py --root data --download          # fetches them first (network, MD5-checked)
    python examples/train_mnist.py --root data --limit 2000        # the first 2,000 training images only

The four IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
t10k-labels-idx1-ubyte, plain or .gz) go in <root>/MNIST/raw/, torchvision's layout; without them the
script says so and exits with status 2. The weights go to <out>/mnist_cnn.tpl.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import tensorplug as torch
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.utils.data import DataLoader, Subset
from tensorplug.vision import datasets, transforms


class Net(nn.Module):
    """Two 3x3 convolutions, 2x2 max pooling, dropout and two linear layers for 1x28x28 digits."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3)
        self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
        self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = self.dropout1(torch.flatten(x, 1))
        return self.fc2(self.dropout2(F.relu(self.fc1(x))))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default="data", help="folder holding MNIST/raw/ (default: data)")
    p.add_argument("--download", action="store_true", help="fetch the files when they are missing")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--limit", type=int, default=0, help="use only the first N training images (0: all)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=".", help="folder for mnist_cnn.tpl")
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)

    # 1. data: PIL images -> tensors in [0, 1] -> normalised with MNIST's mean and standard deviation
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    try:
        train_set = datasets.MNIST(args.root, train=True, transform=tf, download=args.download)
        test_set = datasets.MNIST(args.root, train=False, transform=tf, download=args.download)
    except RuntimeError as e:
        print(f"train_mnist.py: {e}\n(put the files in {os.path.abspath(os.path.join(args.root, 'MNIST', 'raw'))}"
              " or run with --download)", file=sys.stderr)
        return 2
    if args.limit:
        train_set = Subset(train_set, range(min(args.limit, len(train_set))))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=1000)

    model = Net().to(args.device)                                   # 2. model
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)    # 4. optimizer (3. loss: cross entropy)
    for epoch in range(1, args.epochs + 1):                         # 5. the loop
        model.train()
        t0, total, n = time.perf_counter(), 0.0, 0
        for x, y in train_loader:
            x, y = x.to(args.device), y.to(args.device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total, n = total + loss.item() * len(y), n + len(y)
        model.eval()
        correct, test_loss = 0, 0.0
        with torch.no_grad():
            for x, y in test_loader:
                x, y = x.to(args.device), y.to(args.device)
                logits = model(x)
                test_loss += F.cross_entropy(logits, y, reduction="sum").item()
                correct += int((logits.argmax(1) == y).sum().item())
        print(f"epoch {epoch}: train loss {total / n:.4f} ({n} images), test loss {test_loss / len(test_set):.4f}, "
              f"accuracy {correct}/{len(test_set)} ({correct / len(test_set):.1%}), {time.perf_counter() - t0:.1f} s",
              flush=True)
    os.makedirs(args.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out, "mnist_cnn.tpl"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
