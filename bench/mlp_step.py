"""MLP training step: 784-512-256-10 (ReLU), batch 128, float32, cross-entropy, SGD (lr 0.01).

One step = zero_grad, forward, loss, backward, optimizer.step().
Floor: the same step written by hand in NumPy (forward, softmax cross-entropy, backprop through
the three linear layers and the ReLUs, in-place SGD update), from the same initial weights and
the same data; the script first checks that both (and PyTorch) produce the same losses over a
few steps. Goal: <= 1.15x the hand-written NumPy step.

    python bench/mlp_step.py [--quick] [--repeat N] [--batch 128] [--no-torch]

The model, data and NumPy step are shared with bench/grad_penalty.py and bench/mlp_memory.py.
"""
from __future__ import annotations

import numpy as np

import _harness as H

SIZES = (784, 512, 256, 10)
LR = 0.01


def sizes(args):
    """(layer sizes, batch): the issue's MLP, or a tiny one with --quick."""
    if args.quick:
        return (64, 32, 16, 10), 16
    return SIZES, getattr(args, "batch", None) or 128


def make_data(sizes_, batch, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, sizes_[0]), dtype=np.float32)
    y = rng.integers(0, sizes_[-1], batch)
    return x, y


def tp_mlp(sizes_, seed=0):
    """The tensorplug model (nn.Linear's default initialisation, seeded)."""
    import tensorplug as tp
    import tensorplug.nn as nn
    tp.manual_seed(seed)
    layers = []
    for i in range(len(sizes_) - 1):
        layers.append(nn.Linear(sizes_[i], sizes_[i + 1]))
        if i < len(sizes_) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def linear_weights(model):
    """[(W (out, in), b)] as float32 NumPy copies, in order."""
    import tensorplug.nn as nn
    return [(m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy())
            for m in model.modules() if isinstance(m, nn.Linear)]


def torch_mlp(torch, weights):
    layers = []
    for i, (w, b) in enumerate(weights):
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        layers.append(lin)
        if i < len(weights) - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


# -- the hand-written NumPy step --------------------------------------------------------------------------
class NumpyMLP:
    """Parameters as (in, out) matrices, so that the forward is x @ W + b."""

    def __init__(self, weights):
        self.W = [np.ascontiguousarray(w.T) for w, _ in weights]
        self.b = [b.copy() for _, b in weights]

    def step(self, x, y, lr=LR):
        W, b = self.W, self.b
        n = len(W)
        acts, pre = [x], []
        h = x
        for i in range(n):                                   # forward
            z = h @ W[i] + b[i]
            if i < n - 1:
                pre.append(z)
                h = np.maximum(z, 0)
                acts.append(h)
            else:
                h = z
        z = h - h.max(axis=1, keepdims=True)                 # softmax cross-entropy
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        rows = np.arange(len(y))
        loss = -np.log(p[rows, y]).mean()
        d = p                                                # backward
        d[rows, y] -= 1
        d /= len(y)
        for i in range(n - 1, -1, -1):
            gW = acts[i].T @ d
            gb = d.sum(axis=0)
            if i > 0:
                d = (d @ W[i].T) * (pre[i - 1] > 0)
            W[i] -= lr * gW                                  # SGD
            b[i] -= lr * gb
        return loss


# -- the framework steps ------------------------------------------------------------------------------------
def tp_step_fn(model, x, y, lr=LR):
    import tensorplug as tp
    import tensorplug.nn.functional as F
    opt = tp.optim.SGD(model.parameters(), lr=lr)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def torch_step_fn(torch, model, x, y, lr=LR):
    opt = torch.optim.SGD(model.parameters(), lr=lr)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def setup(args, torch=None):
    """({'tensorplug': step, 'floor': step}, torch_build or None, sizes, batch), after checking that
    the two steps agree; torch_build() builds PyTorch's step from the same weights and checks it."""
    import tensorplug as tp
    sz, batch = sizes(args)
    xn, yn = make_data(sz, batch)
    model = tp_mlp(sz)
    weights = linear_weights(model)
    ref = NumpyMLP(weights)
    x, y = tp.from_numpy(xn), tp.from_numpy(yn)
    fns = {"tensorplug": tp_step_fn(model, x, y), "floor": lambda: ref.step(xn, yn)}
    losses = {k: [float(fn()) for _ in range(3)] for k, fn in fns.items()}
    H.check_close("MLP losses over 3 steps (tensorplug vs NumPy)", losses["tensorplug"], losses["floor"])

    def torch_build():
        step = torch_step_fn(torch, torch_mlp(torch, weights), torch.from_numpy(xn), torch.from_numpy(yn))
        ref2 = NumpyMLP(weights)
        H.check_close("MLP losses over 3 steps (torch vs NumPy)", [float(step()) for _ in range(3)],
                      [float(ref2.step(xn, yn)) for _ in range(3)])
        return step
    return fns, (torch_build if torch is not None else None), sz, batch


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--batch", type=int, default=None)
    args = p.parse_args(argv)
    H.header("MLP SGD step", args)
    torch = H.get_torch(args)
    fns, torch_build, sz, batch = setup(args, torch)
    t = H.measure(fns, H.repeats(args, 21), target_s=H.step_target(args), torch_build=torch_build)
    H.result(f"MLP {'-'.join(map(str, sz))}, batch {batch}, SGD step", t["tensorplug"], t["floor"],
             floor_name="hand-written NumPy backprop", goal=1.15, torch=t.get("torch"), args=args)


if __name__ == "__main__":
    main()
