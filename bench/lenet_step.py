"""LeNet-5 training step: batch 64 of 1x28x28 float32, SGD (lr 0.01).

conv(1->6, 5x5)-relu-maxpool2, conv(6->16, 5x5)-relu-maxpool2, linear 256-120-84-10 (relu),
cross-entropy, backward, SGD step (zero_grad, forward, backward, optimizer.step()).
Floor: a naive im2col NumPy implementation of the same step written below (sliding_window_view
+ one GEMM per convolution forward, two GEMMs and a col2im loop backward, pooling by reshape and
max, a mask backward), from the same initial weights and data; the script first checks that both
(and PyTorch) give the same losses over a few steps. Goal: <= 1.0x the naive floor.

Also printed (from the former bench/nn_steps.py): the GEMM floor (the step's matrix products of
these shapes in NumPy) and the FLOP floor (the same FLOPs at a large square GEMM's rate).

    python bench/lenet_step.py [--quick] [--repeat N] [--batch 64] [--no-torch]
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import _floors
import _harness as H

LR = 0.01


# -- the naive im2col NumPy step --------------------------------------------------------------------------
def conv_fwd(x, w, b):
    N, C, H, W = x.shape
    O, _, k, _ = w.shape
    oh, ow = H - k + 1, W - k + 1
    cols = sliding_window_view(x, (k, k), axis=(2, 3)).transpose(0, 2, 3, 1, 4, 5).reshape(N * oh * ow, C * k * k)
    out = cols @ w.reshape(O, -1).T + b                                 # (N*oh*ow, O)
    return out.reshape(N, oh, ow, O).transpose(0, 3, 1, 2), cols


def conv_bwd(dout, cols, x_shape, w, need_dx):
    N, O, oh, ow = dout.shape
    _, C, k, _ = w.shape
    dm = dout.transpose(0, 2, 3, 1).reshape(-1, O)
    gw = (dm.T @ cols).reshape(w.shape)
    gb = dm.sum(axis=0)
    dx = None
    if need_dx:                                                         # col2im
        dcols = (dm @ w.reshape(O, -1)).reshape(N, oh, ow, C, k, k)
        dx = np.zeros(x_shape, dtype=dout.dtype)
        for i in range(k):
            for j in range(k):
                dx[:, :, i:i + oh, j:j + ow] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return gw, gb, dx


def pool_fwd(x):
    N, C, H, W = x.shape
    return x.reshape(N, C, H // 2, 2, W // 2, 2).max(axis=(3, 5))


def pool_bwd(dout, x, out):
    N, C, H, W = x.shape
    mask = x.reshape(N, C, H // 2, 2, W // 2, 2) == out[:, :, :, None, :, None]
    return (mask * dout[:, :, :, None, :, None]).reshape(x.shape)


class NumpyLeNet:
    def __init__(self, params):
        self.p = {k: v.copy() for k, v in params.items()}

    def step(self, x, y, lr=LR):
        p = self.p
        n = x.shape[0]
        c1, cols1 = conv_fwd(x, p["conv1.weight"], p["conv1.bias"])
        r1 = np.maximum(c1, 0)
        m1 = pool_fwd(r1)
        c2, cols2 = conv_fwd(m1, p["conv2.weight"], p["conv2.bias"])
        r2 = np.maximum(c2, 0)
        m2 = pool_fwd(r2)
        f = m2.reshape(n, -1)
        h1 = f @ p["fc1.weight"].T + p["fc1.bias"]
        a1 = np.maximum(h1, 0)
        h2 = a1 @ p["fc2.weight"].T + p["fc2.bias"]
        a2 = np.maximum(h2, 0)
        z = a2 @ p["fc3.weight"].T + p["fc3.bias"]
        z = z - z.max(axis=1, keepdims=True)                            # softmax cross-entropy
        e = np.exp(z)
        prob = e / e.sum(axis=1, keepdims=True)
        rows = np.arange(n)
        loss = -np.log(prob[rows, y]).mean()
        g = {}
        d = prob
        d[rows, y] -= 1
        d /= n
        g["fc3.weight"], g["fc3.bias"] = d.T @ a2, d.sum(axis=0)
        d = (d @ p["fc3.weight"]) * (h2 > 0)
        g["fc2.weight"], g["fc2.bias"] = d.T @ a1, d.sum(axis=0)
        d = (d @ p["fc2.weight"]) * (h1 > 0)
        g["fc1.weight"], g["fc1.bias"] = d.T @ f, d.sum(axis=0)
        d = (d @ p["fc1.weight"]).reshape(m2.shape)
        d = pool_bwd(d, r2, m2) * (c2 > 0)
        g["conv2.weight"], g["conv2.bias"], d = conv_bwd(d, cols2, m1.shape, p["conv2.weight"], True)
        d = pool_bwd(d, r1, m1) * (c1 > 0)
        g["conv1.weight"], g["conv1.bias"], _ = conv_bwd(d, cols1, x.shape, p["conv1.weight"], False)
        for k, v in g.items():                                          # SGD
            p[k] -= lr * v
        return loss


# -- the frameworks -----------------------------------------------------------------------------------------
def lenet_class(fw):
    """LeNet-5 written once against the PyTorch API: fw is tensorplug or torch."""
    nn, F = fw.nn, fw.nn.functional

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 4 * 4, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = fw.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)
    return LeNet5


def tp_lenet():
    import tensorplug as tp
    import tensorplug.nn  # noqa: F401  (tp.nn loads on first use)
    tp.manual_seed(0)
    return lenet_class(tp)()


def torch_lenet(torch, params):
    LeNet5 = lenet_class(torch)
    m = LeNet5()
    m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in params.items()})
    return m


def step_fn(fw, model, x, y, lr=LR):
    opt = fw.optim.SGD(model.parameters(), lr=lr)
    F = fw.nn.functional

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--batch", type=int, default=None)
    args = p.parse_args(argv)
    batch = args.batch or (8 if args.quick else 64)
    H.header("LeNet-5 SGD step", args, batch=batch)
    import tensorplug as tp
    torch = H.get_torch(args)

    rng = np.random.default_rng(0)
    xn = rng.standard_normal((batch, 1, 28, 28), dtype=np.float32)
    yn = rng.integers(0, 10, batch)
    model = tp_lenet()
    params = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    ref = NumpyLeNet(params)
    x, y = tp.from_numpy(xn), tp.from_numpy(yn)
    fns = {"tensorplug": step_fn(tp, model, x, y), "floor": lambda: ref.step(xn, yn)}
    losses = {k: [float(fn()) for _ in range(3)] for k, fn in fns.items()}
    H.check_close("LeNet-5 losses over 3 steps (tensorplug vs naive NumPy)", losses["tensorplug"], losses["floor"])

    def torch_build():
        step = step_fn(torch, torch_lenet(torch, params), torch.from_numpy(xn), torch.from_numpy(yn))
        ref2 = NumpyLeNet(params)
        H.check_close("LeNet-5 losses over 3 steps (torch vs naive NumPy)", [float(step()) for _ in range(3)],
                      [float(ref2.step(xn, yn)) for _ in range(3)])
        return step

    reps = H.repeats(args, 21)
    gemm, flops = _floors.gemm_floor_fn(_floors.gemm_shapes(model, lambda: model(x)))
    fns["gemm floor"] = gemm
    t = H.measure(fns, reps, target_s=H.step_target(args), torch_build=torch_build if torch is not None else None)
    peak = _floors.peak_gemm_rate(reps)
    H.result(f"LeNet-5 SGD step, batch {batch}, 1x28x28", t["tensorplug"], t["floor"],
             floor_name="naive im2col NumPy", goal=1.0, torch=t.get("torch"), args=args,
             gemm_floor=f"{H.fmt(t['gemm floor'])} (step / GEMM floor {t['tensorplug'] / t['gemm floor']:.2f})",
             flop_floor=f"{H.fmt(flops / peak)} ({flops / 1e9:.3f} GFLOP at the square-GEMM rate "
                        f"{peak / 1e9:.1f} GFLOP/s; step / FLOP floor {t['tensorplug'] * peak / flops:.1f})")


if __name__ == "__main__":
    main()
