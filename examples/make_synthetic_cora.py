"""A synthetic Cora in the real file format, for pytorch/examples `gcn` and `gat` where the download is impossible.

Writes DIR/cora/cora.content (2708 lines: paper id, 1433 binary word features, class label; tab separated)
and DIR/cora/cora.cites (5429 lines: cited id, citing id), plus DIR/cora.tgz holding both (what `gcn`
downloads and extracts). Features and citations depend on the class (each class prefers its own words;
most citations stay within a class), so a graph network's accuracy means something.

`--requests-stub DIR2` also writes DIR2/requests.py, a stand-in for the `requests` package that serves
DIR/cora.tgz for any `requests.get(url, stream=True)`: put DIR2 first on PYTHONPATH to run gcn (which
downloads unconditionally) unchanged and offline.

    python examples/make_synthetic_cora.py /tmp/gcn --requests-stub /tmp/gcn/offline
"""
from __future__ import annotations

import argparse
import io
import os
import tarfile

import numpy as np

CLASSES = ("Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
           "Reinforcement_Learning", "Rule_Learning", "Theory")
PAPERS, WORDS, CITES = 2708, 1433, 5429
SIZES = (298, 418, 818, 426, 217, 180, 351)      # Cora's class sizes


def make(seed=0):
    """(ids, features uint8 (2708, 1433), labels, cites (5429, 2) as paper ids)."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(len(CLASSES)), SIZES))
    ids = np.sort(rng.choice(np.arange(30, 1_200_000), PAPERS, replace=False))
    # each class prefers 120 words; a paper draws ~18 words, 60% of them from its class's set
    prefer = [rng.choice(WORDS, 120, replace=False) for _ in CLASSES]
    feats = np.zeros((PAPERS, WORDS), dtype=np.uint8)
    for p in range(PAPERS):
        n = max(1, rng.poisson(18))
        own = rng.random(n) < 0.6
        words = np.where(own, rng.choice(prefer[labels[p]], n), rng.integers(0, WORDS, n))
        feats[p, words] = 1
    # citations: 80% within the class, distinct pairs, no self-citations
    by_class = [np.flatnonzero(labels == c) for c in range(len(CLASSES))]
    pairs = set()
    while len(pairs) < CITES:
        a = int(rng.integers(PAPERS))
        b = int(rng.choice(by_class[labels[a]])) if rng.random() < 0.8 else int(rng.integers(PAPERS))
        if a != b and (a, b) not in pairs:
            pairs.add((a, b))
    cites = ids[np.array(sorted(pairs))]
    return ids, feats, labels, cites


def write(out_dir, seed=0):
    ids, feats, labels, cites = make(seed)
    content = "".join(f"{i}\t" + "\t".join(map(str, row)) + f"\t{CLASSES[c]}\n" for i, row, c in zip(ids, feats, labels))
    cites_text = "".join(f"{a}\t{b}\n" for a, b in cites)
    os.makedirs(os.path.join(out_dir, "cora"), exist_ok=True)
    files = {"cora/cora.content": content.encode(), "cora/cora.cites": cites_text.encode()}
    for name, data in files.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    with tarfile.open(os.path.join(out_dir, "cora.tgz"), "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


STUB = '''"""Offline stand-in for `requests`: every get() serves {tgz!r} (see make_synthetic_cora.py)."""


class _Response:
    def __init__(self):
        self.raw = open({tgz!r}, "rb")
        self.status_code = 200

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.raw.close()


def get(url, stream=False, **kwargs):
    return _Response()
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--requests-stub", metavar="DIR2")
    args = ap.parse_args()
    write(args.out_dir, args.seed)
    if args.requests_stub:
        os.makedirs(args.requests_stub, exist_ok=True)
        with open(os.path.join(args.requests_stub, "requests.py"), "w") as f:
            f.write(STUB.format(tgz=os.path.abspath(os.path.join(args.out_dir, "cora.tgz"))))


if __name__ == "__main__":
    main()
