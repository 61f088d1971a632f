"""The models the ONNX tests export, and the export -> check -> onnxruntime helper they share."""
from __future__ import annotations

import importlib.util
import io
import math
import pathlib

import numpy as np

import tensorplug as tp
import tensorplug.nn as nn
import tensorplug.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[2]


def export_and_run(model, args, feeds=None, **kwargs):
    """Export `model` on `args`, check the model (full check), and run it with onnxruntime on `feeds`
    (input name -> array; default: the export arguments). Returns (ModelProto, outputs)."""
    import onnx
    import onnxruntime as ort
    buf = io.BytesIO()
    tp.onnx.export(model, args, buf, **kwargs)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    if feeds is None:
        flat = []
        _flat(args, flat)
        feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), flat)}
    return proto, sess.run(None, feeds)


def _flat(x, out):
    if isinstance(x, tp.Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for a in x:
            _flat(a, out)
    return out


def flat_outputs(out):
    return [t.detach().numpy() for t in _flat(out, [])]


def assert_close(onnx_outs, tp_out, rtol=1e-4, atol=1e-4):
    ref = flat_outputs(tp_out)
    assert len(onnx_outs) == len(ref)
    for got, want in zip(onnx_outs, ref):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# -- models -------------------------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(20, 32), nn.Linear(32, 16), nn.Linear(16, 5)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        return self.fc3(F.relu(self.fc2(tp.tanh(self.fc1(x)))))


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(16 * 5 * 5, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return F.log_softmax(self.fc3(F.relu(self.fc2(F.relu(self.fc1(x))))), dim=1)


def resnet18(num_classes=10):
    spec = importlib.util.spec_from_file_location("_resnet_example", ROOT / "examples" / "resnet.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.resnet18(num_classes=num_classes)


class RNNModel(nn.Module):
    """An encoder, a recurrent module and a decoder (the shape of word_language_model's RNNModel)."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=rnn_type[4:].lower(), dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        h = tp.zeros(self.nlayers, bsz, self.nhid)
        return (h, tp.zeros(self.nlayers, bsz, self.nhid)) if self.rnn_type == "LSTM" else h


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pos = tp.arange(0, max_len, dtype=tp.float).unsqueeze(1)
        freq = tp.exp(tp.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = tp.zeros(max_len, d_model)
        pe[:, 0::2] = tp.sin(pos * freq)
        pe[:, 1::2] = tp.cos(pos * freq)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Module):
    """Embedding, positional encoding, nn.TransformerEncoder with a causal mask, linear decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)
        self.ninp = ninp

    def forward(self, src):
        n = src.size(0)
        mask = tp.log(tp.tril(tp.ones(n, n)))
        x = self.pos_encoder(self.encoder(src) * math.sqrt(self.ninp))
        return F.log_softmax(self.decoder(self.transformer_encoder(x, mask)), dim=-1)


class CausalSelfAttention(nn.Module):
    """minGPT's attention: one projection to q, k, v, a tril buffer as the causal mask."""

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout, self.resid_dropout = nn.Dropout(0.1), nn.Dropout(0.1)
        self.register_buffer("bias", tp.tril(tp.ones(block_size, block_size)).view(1, 1, block_size, block_size))
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, n_embd=32, n_head=4, block_size=16):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd), c_proj=nn.Linear(4 * n_embd, n_embd),
                                      act=nn.GELU(), dropout=nn.Dropout(0.1)))

    def forward(self, x):
        m = self.mlp
        x = x + self.attn(self.ln_1(x))
        return x + m.dropout(m.c_proj(m.act(m.c_fc(self.ln_2(x)))))
