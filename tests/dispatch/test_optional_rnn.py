"""The recurrent-family kernels rnn_layer / rnn_layer_backward: the NumPy backend's native kernels
and the decompositions (optional_rnn) against the float64 per-sequence references of the op
database and against finite differences, for every mode, padded and packed batches, both directions
and LSTM projections."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplug.backends.numpy_backend import rnn as native
from tensorplug.backends.numpy_backend.kernels import build
from tensorplug.dispatch import optional_rnn as decomp
from tensorplug.testing.conformance.opdb.rnn import rnn_layer_backward_ref, rnn_layer_ref

K = build()
G = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
CASES = [(mode, bsz, rev, proj) for mode in G for bsz in [(3, 3, 3), (3, 2, 2, 1)] for rev in (False, True)
         for proj in ((0, 2) if mode == "LSTM" else (0,))]


def args(mode, bsz, rev, proj, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    H, rows, B = 4, sum(bsz), bsz[0]
    P = proj or H
    f = lambda *s, k=1.0: (rng.standard_normal(s) * k).astype(dtype)  # noqa: E731
    return (mode, f(rows, G[mode] * H), f(B, P), f(B, H) if mode == "LSTM" else None, f(G[mode] * H, P, k=0.5),
            f(G[mode] * H), f(P, H, k=0.5) if proj else None, bsz, rev)


def close(got, want, **kw):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, **kw)


@pytest.mark.parametrize("mode,bsz,rev,proj", CASES)
def test_forward_native_and_decomposition_match_reference(mode, bsz, rev, proj):
    a = args(mode, bsz, rev, proj)
    want = rnn_layer_ref(*a)
    close(native.rnn_layer(*a), want, rtol=1e-12, atol=1e-13)
    close(decomp.rnn_layer(K, *a), want, rtol=1e-12, atol=1e-13)


def _loss_grads(mode, a, seed=1):
    rng = np.random.default_rng(seed)
    out, hn, cn, gates, cells = native.rnn_layer(*a)
    d_out, d_hn = rng.standard_normal(out.shape), rng.standard_normal(hn.shape)
    d_cn = rng.standard_normal(cn.shape) if cn is not None else None
    bargs = (mode, d_out, d_hn, d_cn, a[2], a[3], a[4], a[6], out, gates, cells, a[7], a[8])
    return (d_out, d_hn, d_cn), bargs


@pytest.mark.parametrize("mode,bsz,rev,proj", CASES)
def test_backward_native_and_decomposition_match_reference(mode, bsz, rev, proj):
    a = args(mode, bsz, rev, proj)
    _, bargs = _loss_grads(mode, a)
    want = rnn_layer_backward_ref(*bargs)
    close(native.rnn_layer_backward(*bargs), want, rtol=1e-11, atol=1e-12)
    close(decomp.rnn_layer_backward(K, *bargs), want, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("mode,bsz,rev,proj", [c for c in CASES if c[1] == (3, 2, 2, 1)])
def test_backward_matches_finite_differences(mode, bsz, rev, proj):
    """dx, dh0, dc0, dw_hh, db_hh, dw_hr are the derivatives of <d_out, out> + <d_hn, h_n> + <d_cn, c_n>."""
    a = list(args(mode, bsz, rev, proj))
    (d_out, d_hn, d_cn), bargs = _loss_grads(mode, a)
    grads = native.rnn_layer_backward(*bargs)

    def loss():
        out, hn, cn, _, _ = native.rnn_layer(*a)
        return (d_out * out).sum() + (d_hn * hn).sum() + (0.0 if cn is None else (d_cn * cn).sum())
    # argument positions of x, h0, c0, w_hh, b_hh, w_hr and their gradients' positions
    for pos, g in zip((1, 2, 3, 4, 5, 6), grads):
        if a[pos] is None:
            assert g is None
            continue
        arr, num = a[pos], np.zeros_like(a[pos])
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + 1e-6
            lp = loss()
            arr[idx] = old - 1e-6
            lm = loss()
            arr[idx] = old
            num[idx] = (lp - lm) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("mode", list(G))
def test_low_precision_native_matches_float64(mode, dtype):
    """float32 to float32 rounding; float16 computed in float32 and rounded once."""
    a = args(mode, (3, 2, 1), True, 2 if mode == "LSTM" else 0, dtype=dtype)
    a64 = tuple(x.astype(np.float64) if isinstance(x, np.ndarray) else x for x in a)
    got, want = native.rnn_layer(*a), rnn_layer_ref(*a64)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    for g, w in zip(got, want):
        if g is not None:
            assert g.dtype == dtype
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=tol, atol=tol)
