"""A small MLP trained with autocast + GradScaler on the CPU reaches the loss of the float32 loop.

Synthetic 3-class data (labels from a random linear map), fixed seeds, 150 full-batch SGD steps.
Tolerance: the final float32-evaluated cross entropy of the mixed-precision loop is within 5e-3 of
the float32 loop's (which reaches ~0.040 from ln 3 = 1.0986); measured differences are ~3e-6
(bfloat16) and ~1.4e-3 (float16, whose first steps overflow at scale 2**24 and are skipped).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn.functional as F

_rng = np.random.default_rng(0)
X = _rng.standard_normal((256, 8)).astype(np.float32)
Y = np.argmax(X @ _rng.standard_normal((8, 3)), 1)


def _train(dtype, init_scale=2.0 ** 16, steps=150):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    amp = dtype is not None
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=50, enabled=amp)
    x, y = torch.tensor(X), torch.tensor(Y)
    first, skipped = None, 0
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=amp):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        if amp:
            assert logits.dtype is dtype and loss.dtype is torch.float32
        first = loss.item() if first is None else first
        scaler.scale(loss).backward()
        assert all(p.grad.dtype is torch.float32 for p in model.parameters())
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        skipped += scaler.get_scale() < before
    with torch.no_grad():
        final = F.cross_entropy(model(x), y).item()
    return first, final, skipped, scaler


@pytest.fixture(scope="module")
def float32_run():
    return _train(None)


def test_float32_reference_trains(float32_run):
    first, final, skipped, _ = float32_run
    assert abs(first - math.log(3)) < 0.01 and final < 0.05 and skipped == 0


def test_bfloat16_autocast_matches_float32(float32_run):
    first, final, skipped, scaler = _train(torch.bfloat16)
    assert abs(first - float32_run[0]) < 1e-3
    assert abs(final - float32_run[1]) < 5e-3
    assert skipped == 0 and scaler.get_scale() == 2.0 ** 16 * 2 ** 3      # grew at steps 50, 100, 150


def test_float16_autocast_with_overflow_skips_matches_float32(float32_run):
    first, final, skipped, scaler = _train(torch.float16, init_scale=2.0 ** 24)
    assert skipped >= 1                                   # float16 gradients overflowed and were skipped
    assert abs(final - float32_run[1]) < 5e-3
