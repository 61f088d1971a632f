"""normalize, cosine_similarity, pairwise_distance, pdist, one_hot and the distance modules, against
float64 NumPy references written from the definitions, with gradcheck + gradgradcheck."""
import itertools

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 6))
B = RNG.standard_normal((4, 6))


def t(a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def f64(x):
    return np.asarray(x.detach().numpy(), dtype=np.float64)


def pnorm(v, p, axis):
    if p == np.inf:
        return np.abs(v).max(axis=axis)
    if p == 0:
        return (v != 0).sum(axis=axis).astype(np.float64)
    return (np.abs(v) ** p).sum(axis=axis) ** (1 / p)


@pytest.mark.parametrize("p,dim", [(2, 1), (1, 0), (3, -1), (np.inf, 1)])
def test_normalize(p, dim):
    x = A.copy()
    x[0] = 0.0          # a zero row: the denominator is clamped to eps
    n = np.maximum(pnorm(x, p, dim), 1e-12)
    expect = x / np.expand_dims(n, dim)
    np.testing.assert_allclose(f64(F.normalize(t(x), p=p, dim=dim)), expect, atol=1e-12)
    np.testing.assert_allclose(f64(F.normalize(t(x), p=p, dim=dim, eps=0.5)),
                               x / np.expand_dims(np.maximum(pnorm(x, p, dim), 0.5), dim), atol=1e-12)


def test_cosine_similarity():
    def ref(u, v, dim, eps=1e-8):
        nu = np.maximum(np.sqrt((u * u).sum(dim, keepdims=True)), eps)
        nv = np.maximum(np.sqrt((v * v).sum(dim, keepdims=True)), eps)
        return ((u / nu) * (v / nv)).sum(dim)
    np.testing.assert_allclose(f64(F.cosine_similarity(t(A), t(B))), ref(A, B, 1), atol=1e-12)
    np.testing.assert_allclose(f64(F.cosine_similarity(t(A), t(B), dim=0)), ref(A, B, 0), atol=1e-12)
    # broadcasting and a zero vector
    z = np.zeros((1, 6))
    np.testing.assert_allclose(f64(F.cosine_similarity(t(A), t(B[:1]))), ref(A, np.broadcast_to(B[:1], A.shape), 1),
                               atol=1e-12)
    np.testing.assert_allclose(f64(F.cosine_similarity(t(A), t(z))), np.zeros(4), atol=1e-12)
    # the definition: cos of the angle
    u, v = A[0], B[0]
    np.testing.assert_allclose(F.cosine_similarity(t(u), t(v), dim=0).item(),
                               u @ v / np.linalg.norm(u) / np.linalg.norm(v), rtol=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, np.inf])
def test_pairwise_distance(p):
    expect = pnorm(A - B + 1e-6, p, -1)
    np.testing.assert_allclose(f64(F.pairwise_distance(t(A), t(B), p=p)), expect, atol=1e-12)
    r = F.pairwise_distance(t(A), t(B), p=p, keepdim=True)
    assert r.shape == (4, 1)
    np.testing.assert_allclose(f64(F.pairwise_distance(t(A), t(B[0]), p=p, eps=0.0)), pnorm(A - B[0], p, -1),
                               atol=1e-12)


@pytest.mark.parametrize("p", [1, 2, 0.5, np.inf])
def test_pdist(p):
    n = A.shape[0]
    expect = [pnorm(A[i] - A[j], p, 0) for i, j in itertools.combinations(range(n), 2)]
    r = F.pdist(t(A), p=p)
    assert r.shape == (n * (n - 1) // 2,)
    np.testing.assert_allclose(f64(r), expect, atol=1e-12)


def test_one_hot():
    x = torch.tensor([[0, 3], [2, 1]])
    r = F.one_hot(x, 5)
    assert r.dtype == torch.int64 and r.shape == (2, 2, 5)
    np.testing.assert_array_equal(r.numpy(), np.eye(5, dtype=np.int64)[[[0, 3], [2, 1]]])
    r = F.one_hot(torch.tensor([1, 0, 2]))
    assert r.tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 1]]
    assert F.one_hot(torch.tensor([], dtype=torch.int64), 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(torch.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(torch.tensor([1, 3]), 3)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(torch.tensor([], dtype=torch.int64))
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(torch.tensor([1.0]))


def g(*shape, seed=1):
    return t(np.random.default_rng(seed).uniform(-1, 1, shape), requires_grad=True)


GRAD_CASES = {
    "normalize": (lambda a: F.normalize(a, dim=1), lambda: (g(2, 3),)),
    "normalize_p1": (lambda a: F.normalize(a, p=3, dim=0), lambda: (g(2, 3),)),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b), lambda: (g(2, 3), g(2, 3, seed=2))),
    "cosine_similarity_dim0": (lambda a, b: F.cosine_similarity(a, b, dim=0), lambda: (g(3, 2), g(3, 1, seed=3))),
    "pairwise_distance": (lambda a, b: F.pairwise_distance(a, b), lambda: (g(2, 3), g(2, 3, seed=4))),
    "pairwise_distance_p1": (lambda a, b: F.pairwise_distance(a, b, p=3), lambda: (g(2, 3), g(2, 3, seed=5))),
    "pdist": (lambda a: F.pdist(a), lambda: (g(3, 2),)),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_distance_gradients(name):
    fn, make = GRAD_CASES[name]
    args = make()
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_distance_modules():
    m = nn.CosineSimilarity(dim=0, eps=1e-6)
    assert repr(m) == "CosineSimilarity()" and m.dim == 0 and m.eps == 1e-6
    np.testing.assert_allclose(f64(m(t(A), t(B))), f64(F.cosine_similarity(t(A), t(B), dim=0, eps=1e-6)))
    m = nn.PairwiseDistance(p=1, keepdim=True)
    assert repr(m) == "PairwiseDistance()" and m.norm == 1 and m.keepdim
    np.testing.assert_allclose(f64(m(t(A), t(B))), pnorm(A - B + 1e-6, 1, -1)[:, None], atol=1e-12)
    assert list(m.parameters()) == []
