"""LSTM language-model training step at pytorch/examples word_language_model's defaults, vs PyTorch.

Sizes: its defaults (`--model LSTM`): vocab 10000 (wikitext-2 has 33278; 10000 keeps the decoder
at the size of the common PTB setup), emsize 200, nhid 200, 2 layers, bptt 35, batch 20, dropout
0.2 (on the embeddings, between the LSTM layers and on its output), untied weights, encoder and
decoder weights uniform(-0.1, 0.1), decoder bias zero.

One step = as in its train(): the hidden state of the previous step detached, zero_grad, forward
(embedding, dropout, LSTM, dropout, Linear 200->10000, log_softmax), NLL loss, backward,
clip_grad_norm_(0.25), plain SGD with lr 20 (p.add_(p.grad, alpha=-lr)). Both frameworks run the
model code below from the same weights; the losses over 3 steps (dropout off) must agree before
timing. Floor: the GEMM floor (the LSTM's input projections and recurrence, the decoder, each with
its backward products). Then the cold first step and peak RSS per side (bench/_steps.py).

    python bench/lstm_lm_step.py [--quick] [--repeat N] [--threads N] [--cold|--no-cold] [--no-torch]
"""
from __future__ import annotations

import time

_T0 = time.perf_counter()           # a --child's cold time starts here, before NumPy and the framework

import dataclasses  # noqa: E402
import sys  # noqa: E402

import _steps  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 10000
    emsize: int = 200
    nhid: int = 200
    nlayers: int = 2
    bptt: int = 35
    batch: int = 20
    dropout: float = 0.2
    lr: float = 20.0
    clip: float = 0.25

    @property
    def label(self):
        return (f"LSTM LM (word_language_model) vocab {self.vocab}, {self.nlayers}x{self.nhid}, "
                f"bptt {self.bptt}, batch {self.batch}")


CONFIGS = {"lstm": Config()}


def config(name, quick):
    c = CONFIGS[name]
    return dataclasses.replace(c, vocab=50, emsize=16, nhid=16, bptt=5, batch=4) if quick else c


def build(T, c: Config):
    nn, F = T.nn, T.nn.functional

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(c.dropout)
            self.encoder = nn.Embedding(c.vocab, c.emsize)
            self.rnn = nn.LSTM(c.emsize, c.nhid, c.nlayers, dropout=c.dropout)
            self.decoder = nn.Linear(c.nhid, c.vocab)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, inp, hidden):
            out, hidden = self.rnn(self.drop(self.encoder(inp)), hidden)
            decoded = self.decoder(self.drop(out)).view(-1, c.vocab)
            return F.log_softmax(decoded, dim=1), hidden

    T.manual_seed(0)
    return LM()


def make_step(T, model, x, y, c: Config):
    params = list(model.parameters())
    hidden = [(T.zeros(c.nlayers, c.batch, c.nhid), T.zeros(c.nlayers, c.batch, c.nhid))]
    targets = y.reshape(-1)

    def step():
        h = tuple(v.detach() for v in hidden[0])            # repackage_hidden
        model.zero_grad()
        out, hidden[0] = model(x, h)
        loss = T.nn.functional.nll_loss(out, targets)
        loss.backward()
        T.nn.utils.clip_grad_norm_(params, c.clip)
        with T.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-c.lr)
        return loss.detach()
    return step


def data(c: Config):
    """A (bptt, batch) slice of a batchified token stream and its next tokens."""
    import numpy as np
    stream = np.random.default_rng(0).integers(0, c.vocab, ((c.bptt + 1), c.batch))
    return stream[:-1].copy(), stream[1:].copy()


def gemm_shapes(c: Config):
    import _floors
    m = c.bptt * c.batch
    shapes = []
    for layer in range(c.nlayers):
        shapes += _floors.lstm_gemm_shapes(c.bptt, c.batch, c.emsize if layer == 0 else c.nhid, c.nhid, 1)
    return shapes + [(m, c.nhid, c.vocab), (m, c.vocab, c.nhid), (c.nhid, m, c.vocab)]


def main(argv=None):
    _steps.main(sys.modules[__name__], argv, _T0)


if __name__ == "__main__":
    main()
