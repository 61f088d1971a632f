"""makemore training steps (MLP and bag-of-words) at makemore's defaults, tensorplug vs PyTorch.

Sizes are karpathy/makemore's defaults on its names.txt: vocab 27 (26 letters + the start/end
token), block_size 16 (the longest name + 1), n_embd 64, n_embd2 64, batch 32, AdamW lr 5e-4,
weight decay 0.01, betas (0.9, 0.99), eps 1e-8; targets past each word's end are -1
(cross-entropy's ignore_index), word lengths drawn at random.

* mlp (`--type mlp`): each position sees the embeddings (a 28 x 64 table: the 27 tokens and a
  <BLANK>) of itself and the 15 tokens before it, gathered by rolling the index tensor, written
  with index assignment, concatenated (16 x 64 = 1024 features), Linear 1024->64, tanh,
  Linear 64->27.
* bow (`--type bow`): token + position embeddings, a causal bag of words (a zero (B, T, T) score
  tensor masked_fill'ed with -inf above the diagonal, softmax, a batched matmul with the features)
  added as a residual, a tanh MLP 64->64->64 residual, Linear 64->27.

One step = zero_grad(set_to_none), forward, cross-entropy, backward, AdamW. Both frameworks run the
model code below from the same weights; the losses over 3 steps must agree before timing. Floor:
the GEMM floor. Then the cold first step and peak RSS per side in fresh processes (bench/_steps.py).

    python bench/makemore_step.py [--quick] [--repeat N] [--threads N] [--model mlp|bow] [--cold|--no-cold] [--no-torch]
"""
from __future__ import annotations

import time

_T0 = time.perf_counter()           # a --child's cold time starts here, before NumPy and the framework

import dataclasses  # noqa: E402
import sys  # noqa: E402

import _steps  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    kind: str
    vocab: int = 27
    block: int = 16
    n_embd: int = 64
    n_embd2: int = 64
    batch: int = 32
    lr: float = 5e-4
    weight_decay: float = 0.01

    @property
    def label(self):
        what = "MLP (embedding + tanh MLP)" if self.kind == "mlp" else "bag of words"
        return (f"makemore {what}, vocab {self.vocab}, block {self.block}, n_embd {self.n_embd}/{self.n_embd2}, "
                f"batch {self.batch}")


CONFIGS = {"mlp": Config("mlp"), "bow": Config("bow")}


def config(name, quick):
    c = CONFIGS[name]
    return dataclasses.replace(c, block=6, batch=4, n_embd=8, n_embd2=8) if quick else c


def build(T, c: Config):
    nn, F = T.nn, T.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(c.vocab + 1, c.n_embd)          # + the <BLANK> token
            self.mlp = nn.Sequential(nn.Linear(c.block * c.n_embd, c.n_embd2), nn.Tanh(),
                                     nn.Linear(c.n_embd2, c.vocab))

        def forward(self, idx):
            embs = []
            for _ in range(c.block):
                embs.append(self.wte(idx))
                idx = T.roll(idx, 1, 1)
                idx[:, 0] = c.vocab
            return self.mlp(T.cat(embs, -1))

    class BoW(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(c.vocab, c.n_embd)
            self.wpe = nn.Embedding(c.block, c.n_embd)
            self.fc = nn.Linear(c.n_embd, c.n_embd2)
            self.proj = nn.Linear(c.n_embd2, c.n_embd)
            self.head = nn.Linear(c.n_embd, c.vocab)
            self.register_buffer("causal", T.tril(T.ones(c.block, c.block)).view(1, c.block, c.block),
                                 persistent=False)

        def forward(self, idx):
            b, t = idx.shape
            x = self.wte(idx) + self.wpe(T.arange(t).unsqueeze(0))
            att = T.zeros((b, t, t)).masked_fill(self.causal[:, :t, :t] == 0, float("-inf"))
            x = x + F.softmax(att, dim=-1) @ x
            x = x + self.proj(T.tanh(self.fc(x)))
            return self.head(x)

    T.manual_seed(0)
    return MLP() if c.kind == "mlp" else BoW()


def make_step(T, model, x, y, c: Config):
    opt = T.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay, betas=(0.9, 0.99), eps=1e-8)
    F = T.nn.functional

    def step():
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1)
        model.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def data(c: Config):
    """Rows as makemore's dataset makes them: x = <START> word, y = word <END> then -1."""
    import numpy as np
    rng = np.random.default_rng(0)
    x = np.zeros((c.batch, c.block), dtype=np.int64)
    y = np.full((c.batch, c.block), -1, dtype=np.int64)
    for i, n in enumerate(rng.integers(2, c.block, c.batch)):
        word = rng.integers(1, c.vocab, n)
        x[i, 1:n + 1] = word
        y[i, :n] = word
        y[i, n] = 0
    return x, y


def gemm_shapes(c: Config):
    m = c.batch * c.block

    def linear(k, n):                           # forward, grad input, grad weight
        return [(m, k, n), (m, n, k), (k, m, n)]
    if c.kind == "mlp":
        return linear(c.block * c.n_embd, c.n_embd2) + linear(c.n_embd2, c.vocab)
    bow = [(c.batch, c.block, c.block, c.n_embd)] * 2      # att @ x and its input gradient (att needs none)
    return bow + linear(c.n_embd, c.n_embd2) + linear(c.n_embd2, c.n_embd) + linear(c.n_embd, c.vocab)


def main(argv=None):
    _steps.main(sys.modules[__name__], argv, _T0)


if __name__ == "__main__":
    main()
