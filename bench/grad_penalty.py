"""MLP gradient-penalty step (double backward), next to the plain MLP step of the same framework.

The MLP of bench/mlp_step.py (784-512-256-10, batch 128, SGD lr 0.01). One penalty step =
zero_grad, forward, loss = cross-entropy, g = autograd.grad(loss, parameters, create_graph=True),
total = loss + 0.1 * sum(|g|^2) (the gradient penalty of the PyTorch 0.2 release notes, as
examples/resnet.py computes it), total.backward() (a backward through the backward), SGD step.
Floor: the plain tensorplug MLP step (bench/mlp_step.py's), measured in the same process.
Goal: penalty step <= 3x the plain step. The PyTorch column is PyTorch's penalty step (its own
penalty / plain ratio is printed as well).

    python bench/grad_penalty.py [--quick] [--repeat N] [--no-torch]
"""
from __future__ import annotations

import _harness as H
import mlp_step as M

PENALTY = 0.1


def tp_penalty_fn(model, x, y, lr=M.LR):
    import tensorplug as tp
    import tensorplug.nn.functional as F
    params = list(model.parameters())
    opt = tp.optim.SGD(params, lr=lr)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        grads = tp.autograd.grad(loss, params, create_graph=True)
        penalty = sum(g.pow(2).sum() for g in grads)
        total = loss + PENALTY * penalty
        total.backward()
        opt.step()
        return total.detach()
    return step


def torch_penalty_fn(torch, model, x, y, lr=M.LR):
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=lr)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        grads = torch.autograd.grad(loss, params, create_graph=True)
        penalty = sum(g.pow(2).sum() for g in grads)
        total = loss + PENALTY * penalty
        total.backward()
        opt.step()
        return total.detach()
    return step


def main(argv=None):
    p = H.parser(__doc__)
    args = p.parse_args(argv)
    H.header("MLP gradient-penalty step", args)
    import tensorplug as tp
    torch = H.get_torch(args)
    sz, batch = M.sizes(args)
    xn, yn = M.make_data(sz, batch)
    x, y = tp.from_numpy(xn), tp.from_numpy(yn)
    model = M.tp_mlp(sz)
    weights = M.linear_weights(model)
    fns = {"tensorplug": tp_penalty_fn(model, x, y), "floor": M.tp_step_fn(M.tp_mlp(sz), x, y)}

    def torch_build():
        xt, yt = torch.from_numpy(xn), torch.from_numpy(yn)
        pen = torch_penalty_fn(torch, M.torch_mlp(torch, weights), xt, yt)
        ref = tp_penalty_fn(M.tp_mlp(sz), x, y)
        H.check_close("penalised losses over 3 steps (tensorplug vs torch)", [float(ref()) for _ in range(3)],
                      [float(pen()) for _ in range(3)])
        return {"torch": pen, "torch plain": M.torch_step_fn(torch, M.torch_mlp(torch, weights), xt, yt)}
    t = H.measure(fns, H.repeats(args, 15), target_s=H.step_target(args),
                  torch_build=torch_build if torch is not None else None)
    extra = {}
    if torch is not None:
        extra["torch penalty / plain step"] = round(t["torch"] / t["torch plain"], 3)
        extra["torch plain step"] = H.fmt(t["torch plain"])
    H.result(f"MLP {'-'.join(map(str, sz))} gradient-penalty step (double backward)", t["tensorplug"],
             t["floor"], floor_name="tensorplug plain MLP step", goal=3.0, torch=t.get("torch"), args=args,
             **extra)


if __name__ == "__main__":
    main()
