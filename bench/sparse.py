"""Sparse @ dense at the pytorch/examples gcn sizes (Cora), forward + backward, next to SciPy's CSR product.

Two products of one GCN step: the normalised adjacency D^-1/2 (A + I) D^-1/2 (2708 nodes, 10556
edges + 2708 self loops, coalesced) times the hidden features (2708 x 16), and the row-normalised
sparse bag-of-words features (2708 x 1433, ~18 words a paper) times the first layer's weight
(1433 x 16). Each workload: out = S @ X, out.backward(G) (so X receives S^T @ G).
Floor: the same two products by SciPy CSR matrices built once (scipy.sparse, single-threaded C),
measured in the same process. Extra lines: the backend-independent decomposition
(core/dispatch/optional_sparse.py, what CUDA and the trace backend run) and SciPy with the COO -> CSR
conversion each call needs, and sorted segment sums (the NumPy backend's kernel without SciPy): how the
NumPy backend's kernel (SciPy's, imported on first use) was chosen. The PyTorch column: torch.sparse.mm's step.

    python bench/sparse.py [--quick] [--repeat N] [--no-torch]
"""
from __future__ import annotations

import numpy as np

import _harness as H

NODES, EDGES, WORDS, HIDDEN = 2708, 10556, 1433, 16


def make(quick, seed=0):
    """(adjacency (rows, cols, vals), features (rows, cols, vals), sizes) as float32 COO triples."""
    rng = np.random.default_rng(seed)
    n, e, w, h = (200, 800, 100, 8) if quick else (NODES, EDGES, WORDS, HIDDEN)
    src, dst = rng.integers(0, n, e // 2), rng.integers(0, n, e // 2)
    r = np.concatenate([src, dst, np.arange(n)])
    c = np.concatenate([dst, src, np.arange(n)])
    key = np.unique(r * n + c)
    r, c = key // n, key % n
    deg = np.bincount(r, minlength=n).astype(np.float64)
    adj = (r, c, (1 / np.sqrt(deg[r] * deg[c])).astype(np.float32))
    fr = np.repeat(np.arange(n), 18)
    fc = rng.integers(0, w, fr.size)
    key = np.unique(fr * w + fc)
    fr, fc = key // w, key % w
    feats = (fr, fc, (1 / np.bincount(fr, minlength=n)[fr]).astype(np.float32))
    return adj, feats, (n, w, h)


def tp_step(tp, s, x, g):
    def step():
        x.grad = None
        tp.sparse.mm(s, x).backward(g)
        return x.grad
    return step


def main(argv=None):
    p = H.parser(__doc__)
    args = p.parse_args(argv)
    H.header("sparse @ dense (gcn sizes)", args)
    import scipy.sparse as sp
    import tensorplug as tp
    from tensorplug.dispatch import optional_sparse as OS
    from tensorplug.dispatch.decompositions import complete_table
    torch = H.get_torch(args)
    adj, feats, (n, w, h) = make(args.quick)
    rng = np.random.default_rng(1)
    cases = {"adjacency @ hidden": (adj, (n, n), rng.standard_normal((n, h)).astype(np.float32)),
             "features @ weight": (feats, (n, w), rng.standard_normal((w, h)).astype(np.float32))}
    for name, ((r, c, v), shape, xn) in cases.items():
        gn = rng.standard_normal((shape[0], xn.shape[1])).astype(np.float32)
        s = tp.sparse_coo_tensor(np.stack([r, c]), tp.from_numpy(v), shape).coalesce()
        x = tp.from_numpy(xn.copy()).requires_grad_()
        g = tp.from_numpy(gn)
        csr, csr_t = sp.csr_matrix((v, (r, c)), shape=shape), sp.csr_matrix((v, (c, r)), shape=shape[::-1])

        def floor():
            return csr @ xn, csr_t @ gn

        def scipy_per_call():
            return (sp.csr_matrix((v, (r, c)), shape=shape) @ xn, sp.csr_matrix((v, (c, r)), shape=shape[::-1]) @ gn)
        K = complete_table({k: f for k, f in s._v._k.items() if not k.startswith("sparse_")})
        idx, idx_t, vals = s._i._data, np.ascontiguousarray(s._i._data[::-1]), s._v._data

        native = s._v._k["sparse_mm"]

        def numpy_kernels():
            return native(idx, vals, shape[0], xn), native(idx_t, vals, shape[1], gn)

        from tensorplug.backends.numpy_backend.sparse import _segment_mm

        def segment_sums():
            return _segment_mm(idx, vals, shape[0], xn), _segment_mm(idx_t, vals, shape[1], gn)

        def decomposed():
            return OS.sparse_mm(K, idx, vals, shape[0], xn), OS.sparse_mm(K, idx_t, vals, shape[1], gn)
        step = tp_step(tp, s, x, g)
        H.check_close(f"{name}: forward (tensorplug vs scipy)", tp.sparse.mm(s, x).detach().numpy(), csr @ xn)
        H.check_close(f"{name}: gradient (tensorplug vs scipy)", step().numpy(), csr_t @ gn)
        fns = {"tensorplug": step, "floor": floor, "scipy per call": scipy_per_call, "numpy kernels": numpy_kernels,
               "segment sums": segment_sums, "decomposed": decomposed}

        def torch_build():
            ts = torch.sparse_coo_tensor(torch.from_numpy(np.stack([r, c])), torch.from_numpy(v), shape).coalesce()
            tx, tg = torch.from_numpy(xn.copy()).requires_grad_(), torch.from_numpy(gn)

            def tstep():
                tx.grad = None
                torch.sparse.mm(ts, tx).backward(tg)
                return tx.grad
            H.check_close(f"{name}: gradient (tensorplug vs torch)", step().numpy(), tstep().numpy())
            return tstep
        t = H.measure(fns, H.repeats(args, 15), target_s=H.step_target(args),
                      torch_build=torch_build if torch is not None else None)
        H.result(f"sparse {name} fwd+bwd {shape[0]}x{shape[1]} nnz={r.size} @ {xn.shape[1]} cols", t["tensorplug"],
                 t["floor"], floor_name="scipy CSR built once", torch=t.get("torch"), args=args,
                 **{"the two products by the NumPy backend's kernel (SciPy CSR when importable)": H.fmt(t["numpy kernels"]),
                    "the two products by sorted segment sums (its fallback without SciPy)": H.fmt(t["segment sums"]),
                    "the two products by scipy with COO -> CSR per call": H.fmt(t["scipy per call"]),
                    "the two products by the decomposition (gather + scatter_add)": H.fmt(t["decomposed"])})


if __name__ == "__main__":
    main()
