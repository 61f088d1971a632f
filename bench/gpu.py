"""GPU benchmarks of the cuda backend, each next to the device's ceiling measured in the same run.

* matmul: TFLOP/s of tensorplug's float32 `a @ b` (n x n) against a CuPy matmul of the same shape
  (cuBLAS: the device's practical matmul ceiling), as a ratio; TF32 is off (tensorplug's default)
  in both, and a second row measures both with TF32 allowed;
* elementwise: GB/s of tensorplug's `a + b` (3 arrays moved) and `x * 2 + 1` (2 kernels, 5 arrays
  moved) against a large device-to-device copy (the device's practical bandwidth ceiling);
* training steps on the device: a 3-layer MLP (batch 512, 784-2048-2048-10, cross entropy, SGD) and
  ResNet-18 (batch 32 of 3x128x128, forward + backward + SGD): ms per step, the step's matmul and
  convolution FLOPs (forward + both backward products) at the CuPy matmul rate as the floor, and the
  ratio step / floor.

Medians over --repeat timed runs after warm-up; every timing ends with a device synchronisation.
Besides the table, each measurement is printed as a `RESULT {json}` line (bench/_harness.py's
format: tensorplug's time, the floor's time = the same bytes or FLOPs at the ceiling's rate, their
ratio) for bench/run_all.py. A benchmark reports numbers; it asserts nothing about time.

    python bench/gpu.py [--device cuda] [--repeat 5] [--json FILE] [--quick] [--skip-resnet]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import statistics
import sys
import time

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F

_ROOT = pathlib.Path(__file__).resolve().parents[1]
_CONVS = tuple(getattr(nn, n) for n in ("Conv1d", "Conv2d", "Conv3d") if hasattr(nn, n))


class Timer:
    """Median wall time of fn() over `repeat` runs after `warmup`, each ended by a device sync."""

    def __init__(self, backend, index, repeat):
        self.backend, self.index, self.repeat = backend, index, repeat

    def sync(self):
        self.backend.synchronize(self.index)

    def __call__(self, fn, warmup=2, repeat=None):
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(repeat or self.repeat):
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)


# -- ceilings (CuPy itself) -------------------------------------------------------------------------------
def copy_ceiling(xp, timer, nbytes):
    """Bytes/s of a device-to-device copy of nbytes (read + write counted)."""
    n = nbytes // 4
    src = xp.ones((n,), dtype=np.float32)
    dst = xp.empty_like(src)
    t = timer(lambda: xp.copyto(dst, src))
    return 2 * n * 4 / t


def matmul_ceiling(xp, timer, n):
    """FLOP/s of a CuPy float32 n x n matmul."""
    a = xp.ones((n, n), dtype=np.float32)
    b = xp.ones((n, n), dtype=np.float32)
    t = timer(lambda: xp.matmul(a, b))
    return 2 * n ** 3 / t


# -- tensorplug measurements ---------------------------------------------------------------------------------
def bench_matmul(dev, timer, n):
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    t = timer(lambda: a @ b)
    return 2 * n ** 3 / t


def bench_elementwise(dev, timer, n):
    a = torch.randn(n, device=dev)
    b = torch.randn(n, device=dev)
    t_add = timer(lambda: a + b)
    t_chain = timer(lambda: a * 2 + 1)
    return 3 * n * 4 / t_add, 5 * n * 4 / t_chain


def _flops_of_step(model, run_forward):
    """FLOPs of the matrix products of one forward + backward: 3 products per conv / linear."""
    total = [0]

    def conv_hook(mod, args, out):
        n = args[0].shape[0]
        cout, cin_g, *ks = mod.weight.shape
        total[0] += 3 * 2 * n * int(np.prod(out.shape[2:])) * cin_g * int(np.prod(ks)) * cout

    def linear_hook(mod, args, out):
        m = int(np.prod(args[0].shape[:-1]))
        total[0] += 3 * 2 * m * mod.in_features * mod.out_features

    handles = []
    for mod in model.modules():
        if isinstance(mod, _CONVS):
            handles.append(mod.register_forward_hook(conv_hook))
        elif isinstance(mod, nn.Linear):
            handles.append(mod.register_forward_hook(linear_hook))
    with torch.no_grad():
        run_forward()
    for h in handles:
        h.remove()
    return total[0]


def _train_step(model, x, y, lr=0.01):
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.sub_(lr * p.grad)
    return step


def bench_mlp(dev, timer, batch, width):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10)).to(dev)
    x = torch.randn(batch, 784, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    t = timer(_train_step(model, x, y))
    return t, _flops_of_step(model, lambda: model(x))


def _load_resnet():
    spec = importlib.util.spec_from_file_location("tensorplug_example_resnet", _ROOT / "examples" / "resnet.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bench_resnet(dev, timer, batch, size):
    torch.manual_seed(0)
    model = _load_resnet().resnet18(num_classes=1000).to(dev)
    x = torch.randn(batch, 3, size, size, device=dev)
    y = torch.randint(0, 1000, (batch,), device=dev)
    t = timer(_train_step(model, x, y), warmup=1)
    return t, _flops_of_step(model, lambda: model(x))


# -- the run ---------------------------------------------------------------------------------------------
def _result(workload, t, floor, floor_name, quick, **extra):
    """The RESULT line of bench/_harness.py (times in seconds; ratio = tensorplug / floor)."""
    rec = {"workload": workload, "unit": "s", "tensorplug": t, "floor": floor, "floor_name": floor_name,
           "ratio": t / floor if floor else None, "goal": None, "verdict": "info", "torch": None,
           "tensorplug_vs_torch": None, "torch_vs_floor": None, "quick": quick, "note": "", "extra": extra}
    print("RESULT " + json.dumps(rec), flush=True)


def run(device="cuda", repeat=5, quick=False, skip_resnet=False, out=print):
    dev = torch.device(device)
    probe = torch.zeros(1, device=dev)
    backend = probe.backend
    index = probe.device.index
    xp = getattr(backend, "xp", None)
    if xp is None:
        raise RuntimeError(f"backend {backend.name!r} exposes no array module (xp): the ceilings need CuPy")
    timer = Timer(backend, index, repeat)
    sizes = dict(copy_bytes=1 << 22, mm=256, ew=1 << 18, mlp=(64, 256), resnet=(2, 32)) if quick else \
        dict(copy_bytes=1 << 30, mm=8192, ew=1 << 26, mlp=(512, 2048), resnet=(32, 128))
    name = backend.device_name(index) if hasattr(backend, "device_name") else str(dev)
    res = {"device": str(probe.device), "device_name": name, "backend": backend.name, "backend_version": backend.version,
           "repeat": repeat, "quick": quick, "tf32_default": bool(getattr(backend, "allow_tf32", False))}
    out(f"{name} ({probe.device}, backend {backend.name!r} {backend.version}); medians of {repeat}")

    bw = copy_ceiling(xp, timer, sizes["copy_bytes"])
    res["copy_ceiling_GBps"] = bw / 1e9
    add_bw, chain_bw = bench_elementwise(dev, timer, sizes["ew"])
    res["elementwise"] = {"n": sizes["ew"], "add_GBps": add_bw / 1e9, "add_ratio": add_bw / bw,
                          "mul_add_GBps": chain_bw / 1e9, "mul_add_ratio": chain_bw / bw}
    out(f"device-to-device copy ceiling {bw / 1e9:9.1f} GB/s ({sizes['copy_bytes'] >> 20} MiB)")
    out(f"elementwise a + b        {add_bw / 1e9:9.1f} GB/s   ratio to copy ceiling {add_bw / bw:5.2f}")
    out(f"elementwise x * 2 + 1    {chain_bw / 1e9:9.1f} GB/s   ratio to copy ceiling {chain_bw / bw:5.2f}")
    n_ew = sizes["ew"]
    _result(f"gpu elementwise a + b ({n_ew} float32)", 3 * n_ew * 4 / add_bw, 3 * n_ew * 4 / bw,
            "the same bytes at the device-to-device copy rate", quick, GBps=add_bw / 1e9, ceiling_GBps=bw / 1e9)
    _result(f"gpu elementwise x * 2 + 1 ({n_ew} float32)", 5 * n_ew * 4 / chain_bw, 5 * n_ew * 4 / bw,
            "the same bytes at the device-to-device copy rate", quick, GBps=chain_bw / 1e9, ceiling_GBps=bw / 1e9)

    n = sizes["mm"]
    mm = {}
    for label, tf32 in (("fp32", False), ("tf32", True)):
        if tf32 and not hasattr(backend, "set_allow_tf32"):
            continue
        prev = getattr(backend, "allow_tf32", False)
        if hasattr(backend, "set_allow_tf32"):
            backend.set_allow_tf32(tf32)
        try:
            ceil = matmul_ceiling(xp, timer, n)
            got = bench_matmul(dev, timer, n)
        finally:
            if hasattr(backend, "set_allow_tf32"):
                backend.set_allow_tf32(prev)
        mm[label] = {"n": n, "TFLOPs": got / 1e12, "ceiling_TFLOPs": ceil / 1e12, "ratio": got / ceil}
        _result(f"gpu matmul {n}x{n} {label}", 2 * n ** 3 / got, 2 * n ** 3 / ceil, f"CuPy matmul ({label})", quick,
                TFLOPs=got / 1e12, ceiling_TFLOPs=ceil / 1e12)
        out(f"matmul {n}x{n} {label}     {got / 1e12:9.2f} TFLOP/s   CuPy ceiling {ceil / 1e12:8.2f}   "
            f"ratio {got / ceil:5.2f}")
    res["matmul"] = mm
    peak = mm["fp32"]["ceiling_TFLOPs"] * 1e12

    steps = {}
    b, w = sizes["mlp"]
    t, flops = bench_mlp(dev, timer, b, w)
    steps["mlp"] = _step_row(f"gpu MLP 784-{w}-{w}-10 train step (batch {b})", t, flops, peak, out, quick)
    if not skip_resnet:
        b, s = sizes["resnet"]
        t, flops = bench_resnet(dev, timer, b, s)
        steps["resnet18"] = _step_row(f"gpu ResNet-18 train step ({b}x3x{s}x{s})", t, flops, peak, out, quick)
    res["train_steps"] = steps
    return res


def _step_row(label, t, flops, peak, out, quick):
    floor = flops / peak
    out(f"{label}: {t * 1e3:.2f} ms   floor (its {flops / 1e9:.2f} GFLOP at the CuPy fp32 matmul rate) "
        f"{floor * 1e3:.2f} ms   step / floor {t / floor:6.2f}   achieved {flops / t / 1e12:.2f} TFLOP/s")
    _result(label, t, floor, "the step's matmul/conv FLOPs at the CuPy fp32 matmul rate", quick,
            GFLOP=flops / 1e9, TFLOPs=flops / t / 1e12)
    return {"ms": t * 1e3, "gflop": flops / 1e9, "floor_ms": floor * 1e3, "ratio_to_floor": t / floor,
            "TFLOPs": flops / t / 1e12}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", default=None, help="write the results as JSON to this file")
    p.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test of the script)")
    p.add_argument("--skip-resnet", action="store_true")
    p.add_argument("--no-torch", action="store_true", help="accepted for bench/run_all.py (no PyTorch column here)")
    a = p.parse_args(argv)
    try:
        res = run(a.device, a.repeat, a.quick, a.skip_resnet)
    except RuntimeError as e:
        print(f"bench/gpu.py: cannot run on {a.device!r}: {e}", file=sys.stderr)
        return 2
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
