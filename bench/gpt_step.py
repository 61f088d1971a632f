"""GPT training step at minGPT-adder and nanoGPT-shakespeare-char sizes, tensorplug vs PyTorch.

One step = zero_grad, forward (token + position embedding, dropout, n_layer pre-LayerNorm blocks of
causal self-attention through F.scaled_dot_product_attention(is_causal=True) and a GELU MLP, final
LayerNorm, lm head), cross-entropy (ignore_index -1), backward, clip_grad_norm_(1.0), AdamW (weight
decay on the matrices only). Weights initialised N(0, 0.02), biases zero, copied to PyTorch.

* adder: karpathy/minGPT projects/adder (ndigit 2): 'gpt-nano' n_layer 3, n_head 3, n_embd 48,
  block_size 6, vocab 10, batch 64, dropout 0.1, biases, tanh GELU, separate lm head, AdamW lr 5e-4
  betas (0.9, 0.95), wd 0.1; the first 3 targets of each row are -1 (masked), as in its dataset.
* char: nanoGPT shakespeare_char shrunk to 2 layers x 64 (n_head 4, block 64, batch 12, vocab 65,
  dropout 0, no biases, exact GELU, lm head tied to the token embedding, AdamW lr 1e-3 betas
  (0.9, 0.99), wd 0.1).

Before timing, tensorplug and PyTorch run 3 steps from the same weights in eval mode (dropout off)
and must give the same losses. Floor: the GEMM floor (the step's linear-layer and attention matmuls
in NumPy, forward and both backward products). Then the cold first step and the peak RSS of each
side in fresh processes (bench/_steps.py; --no-cold leaves them out, --cold does only them).

    python bench/gpt_step.py [--quick] [--repeat N] [--threads N] [--model adder|char] [--cold|--no-cold] [--no-torch]
"""
from __future__ import annotations

import time

_T0 = time.perf_counter()           # a --child's cold time starts here, before NumPy and the framework

import dataclasses  # noqa: E402
import sys  # noqa: E402

import _steps  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    n_layer: int
    n_head: int
    n_embd: int
    block: int
    vocab: int
    batch: int
    dropout: float
    bias: bool
    gelu: str            # "tanh" or "none" (F.gelu's approximate)
    tied: bool
    lr: float
    betas: tuple
    masked: int = 0      # leading targets of each row set to -1
    weight_decay: float = 0.1
    clip: float = 1.0

    @property
    def label(self):
        return (f"GPT {self.name} ({self.n_layer}x{self.n_embd}, {self.n_head} heads, block {self.block}, "
                f"vocab {self.vocab}, batch {self.batch}{', tied head' if self.tied else ''})")


CONFIGS = {
    "adder": Config("minGPT-adder", 3, 3, 48, 6, 10, 64,
                    0.1, True, "tanh", False, 5e-4, (0.9, 0.95), masked=3),
    "char": Config("nanoGPT-char", 2, 4, 64, 64, 65, 12,
                   0.0, False, "none", True, 1e-3, (0.9, 0.99)),
}
QUICK = {"adder": dict(batch=8), "char": dict(block=16, batch=4)}


def config(name, quick):
    c = CONFIGS[name]
    return dataclasses.replace(c, **QUICK[name]) if quick else c


# -- the model, written once for either framework ---------------------------------------------------------
def build(T, c: Config):
    nn, F = T.nn, T.nn.functional

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
            self.proj = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
            self.drop = nn.Dropout(c.dropout)

        def forward(self, x):
            b, t, e = x.shape
            q, k, v = (z.view(b, t, c.n_head, e // c.n_head).transpose(1, 2) for z in self.qkv(x).split(e, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=c.dropout if self.training else 0.0, is_causal=True)
            return self.drop(self.proj(y.transpose(1, 2).contiguous().view(b, t, e)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(c.n_embd, bias=c.bias)
            self.attn = SelfAttention()
            self.ln2 = nn.LayerNorm(c.n_embd, bias=c.bias)
            self.fc = nn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
            self.out = nn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)
            self.drop = nn.Dropout(c.dropout)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)), approximate=c.gelu)))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(c.vocab, c.n_embd)
            self.wpe = nn.Embedding(c.block, c.n_embd)
            self.drop = nn.Dropout(c.dropout)
            self.blocks = nn.ModuleList([Block() for _ in range(c.n_layer)])
            self.ln_f = nn.LayerNorm(c.n_embd, bias=c.bias)
            self.head = nn.Linear(c.n_embd, c.vocab, bias=False)
            if c.tied:
                self.head.weight = self.wte.weight
            self.register_buffer("pos", T.arange(c.block), persistent=False)

        def forward(self, idx, targets):
            x = self.drop(self.wte(idx) + self.wpe(self.pos[:idx.shape[1]]))
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, c.vocab), targets.view(-1), ignore_index=-1)

    T.manual_seed(0)
    model = GPT()
    with T.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif p.dim() >= 2:
                p.normal_(0.0, 0.02)
    return model


def make_step(T, model, x, y, c: Config):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = T.optim.AdamW([{"params": decay, "weight_decay": c.weight_decay}, {"params": other, "weight_decay": 0.0}],
                        lr=c.lr, betas=c.betas)
    params = list(model.parameters())

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        T.nn.utils.clip_grad_norm_(params, c.clip)
        opt.step()
        return loss.detach()
    return step


def data(c: Config):
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.integers(0, c.vocab, (c.batch, c.block))
    y = rng.integers(0, c.vocab, (c.batch, c.block))
    y[:, :c.masked] = -1
    return x, y


def gemm_shapes(c: Config):
    m, e = c.batch * c.block, c.n_embd

    def linear(k, n):                           # forward, grad input, grad weight
        return [(m, k, n), (m, n, k), (k, m, n)]
    shapes = []
    for _ in range(c.n_layer):
        shapes += linear(e, 3 * e) + _steps.attention_shapes(c.batch * c.n_head, c.block, e // c.n_head)
        shapes += linear(e, e) + linear(e, 4 * e) + linear(4 * e, e)
    return shapes + linear(e, c.vocab)


def main(argv=None):
    _steps.main(sys.modules[__name__], argv, _T0)


if __name__ == "__main__":
    main()
