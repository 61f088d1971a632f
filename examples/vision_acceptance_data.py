"""Small data in the official formats for pytorch/examples' image programs, and (with --run) the runs.

    python examples/vision_acceptance_data.py --out /tmp/vis                 # the data only
    python examples/vision_acceptance_data.py --out /tmp/vis --run --examples DIR \
        [--torch-python /path/to/torch+torchvision/bin/python] [--only mnist,vae]

Writes, under --out (the programs are copied to --out/<program> and run there, unchanged):
    data/MNIST/raw/*-ubyte.gz      300 training and 100 test images, MNIST's IDX format: the 8x8 digits
                                   that ship with tensorplug (vision.datasets.Digits), scaled to 20x20
                                   and centred in 28x28 as MNIST's are. The programs' '../data'.
    mnist_forward_forward/data/    the same files (that program reads './data/').
    super_resolution/dataset/BSDS300/images/{train,test}/*.jpg    16 + 4 RGB images, 260x260
    imagenet/{train,val}/<class>/*.JPEG                          2 classes x 6 + 2 images, 72x72
Each program runs through `tensorplug exec` (and, with --torch-python, on PyTorch) with flags that keep
it short; the table shows the last loss each printed and the wall-time ratio tensorplug / PyTorch.
"""
from __future__ import annotations

import argparse
import gzip
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np

PROGRAMS = {   # name: (folder in pytorch/examples, arguments)
    "mnist_dry": ("mnist", ["main.py", "--epochs", "1", "--dry-run"]),
    "mnist": ("mnist", ["main.py", "--epochs", "1", "--batch-size", "32", "--log-interval", "3"]),
    "mnist_rnn": ("mnist_rnn", ["main.py", "--epochs", "1", "--batch-size", "32", "--log-interval", "3"]),
    "mnist_forward_forward": ("mnist_forward_forward", ["main.py", "--epochs", "20", "--train_size", "300",
                                                        "--test_size", "100", "--log-interval", "5"]),
    "vae": ("vae", ["main.py", "--epochs", "1", "--batch-size", "32", "--log-interval", "3"]),
    "siamese_network": ("siamese_network", ["main.py", "--epochs", "1", "--batch-size", "32",
                                            "--log-interval", "3"]),
    "dcgan": ("dcgan", ["main.py", "--dataset", "fake", "--niter", "1", "--dry-run", "--batchSize", "8",
                        "--workers", "0", "--outf", "out"]),
    "super_resolution": ("super_resolution", ["main.py", "--upscale_factor", "3", "--batchSize", "4",
                                              "--testBatchSize", "2", "--nEpochs", "1", "--lr", "0.001",
                                              "--threads", "0"]),
    "imagenet": ("imagenet", ["main.py", "imagenet_data", "-a", "resnet18", "--epochs", "1", "-b", "4", "-j", "0",
                              "-p", "1", "--no-accel", "--seed", "0"]),
}


def _idx(arr: np.ndarray) -> bytes:
    return bytes([0, 0, 8, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape) + arr.tobytes()


def mnist_like(n_train=300, n_test=100):
    """(train images, train labels, test images, test labels) as MNIST-shaped uint8 arrays."""
    from PIL import Image

    from tensorplug.vision.datasets import Digits
    out = []
    for train, n in ((True, n_train), (False, n_test)):
        ds = Digits(train=train)
        images = np.zeros((n, 28, 28), np.uint8)
        for i in range(n):
            img, _ = ds[i]
            images[i, 4:24, 4:24] = np.asarray(img.resize((20, 20), Image.BILINEAR))
        out += [images, ds.targets.numpy()[:n].astype(np.uint8)]
    return out


def write_mnist(raw: pathlib.Path, arrays) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    names = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    for name, arr in zip(names, arrays):
        (raw / (name + ".gz")).write_bytes(gzip.compress(_idx(arr), mtime=0))
        (raw / name).write_bytes(_idx(arr))


def _picture(rng, size):
    yy, xx = np.mgrid[0:size, 0:size] / size
    f = rng.uniform(1, 6, 3)
    img = np.stack([np.sin(f[0] * xx * 6) * np.cos(f[1] * yy * 4), np.cos(f[2] * (xx + yy) * 5), xx * yy], -1)
    img = (img - img.min()) / (np.ptp(img) + 1e-9) * 200 + rng.uniform(0, 55, (size, size, 3))
    return img.clip(0, 255).astype(np.uint8)


def write_images(out: pathlib.Path) -> None:
    from PIL import Image
    rng = np.random.RandomState(0)
    for split, n in (("train", 16), ("test", 4)):
        folder = out / "super_resolution" / "dataset" / "BSDS300" / "images" / split
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            Image.fromarray(_picture(rng, 260)).save(folder / f"{100000 + i}.jpg", quality=90)
    for split, n in (("train", 6), ("val", 2)):
        for cls in ("n01440764", "n01443537"):
            folder = out / "imagenet" / "imagenet_data" / split / cls
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                Image.fromarray(_picture(rng, 72)).save(folder / f"{cls}_{i}.JPEG", quality=90)


def make_data(out: pathlib.Path) -> None:
    arrays = mnist_like()
    write_mnist(out / "data" / "MNIST" / "raw", arrays)
    write_mnist(out / "mnist_forward_forward" / "data" / "MNIST" / "raw", arrays)
    write_images(out)


_LOSS = re.compile(r"(?:[Ll]oss(?:_D)?|Average loss|Avg\. Loss)[:=]?\s*([0-9]+\.[0-9]+(?:e[+-][0-9]+)?)")


def run(name, examples: pathlib.Path, out: pathlib.Path, python: list[str]):
    folder, args = PROGRAMS[name]
    work = out / folder
    shutil.copytree(examples / folder, work, dirs_exist_ok=True)     # the program beside the data made for it
    t0 = time.perf_counter()
    r = subprocess.run([*python, *args], cwd=work, capture_output=True, text=True, timeout=1800,
                       env=dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"))
    seconds = time.perf_counter() - t0
    text = r.stdout + r.stderr
    (out / f"{name}.{'torch' if len(python) == 1 else 'tensorplug'}.log").write_text(text)     # the whole output
    losses = _LOSS.findall(text)
    return {"rc": r.returncode, "seconds": seconds, "last_loss": losses[-1] if losses else None,
            "tail": text.strip().splitlines()[-3:] if text.strip() else []}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=pathlib.Path)
    p.add_argument("--run", action="store_true")
    p.add_argument("--examples", type=pathlib.Path, help="a pytorch/examples snapshot")
    p.add_argument("--torch-python", help="an interpreter with torch and torchvision")
    p.add_argument("--only", default="", help="comma-separated names of PROGRAMS")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    make_data(args.out)
    print(f"wrote the data under {args.out}")
    if not args.run:
        return 0
    names = [n for n in PROGRAMS if not args.only or n in args.only.split(",")]
    tp = [str(pathlib.Path(sys.executable).with_name("tensorplug")), "exec"]
    for name in names:
        a = run(name, args.examples, args.out, tp)
        b = run(name, args.examples, args.out, [args.torch_python]) if args.torch_python else None
        ratio = f"{a['seconds'] / b['seconds']:.2f}" if b else "-"
        print(f"{name:22s} tensorplug rc {a['rc']} loss {a['last_loss']} {a['seconds']:.1f} s | "
              + (f"torch rc {b['rc']} loss {b['last_loss']} {b['seconds']:.1f} s | ratio {ratio}" if b else ""),
              flush=True)
        if a["rc"]:
            print("    tensorplug: " + " / ".join(a["tail"]), flush=True)
        if b and b["rc"]:
            print("    torch: " + " / ".join(b["tail"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
