"""replace_pattern: non-overlapping matches, replacement placement, returned Match records."""
import numpy as np

import tensorplug as torch
import tensorplug.fx as fx


class M(torch.nn.Module):
    def forward(self, x, w1, w2):
        m1 = torch.cat([torch.neg(w1), w2]).sum()
        m2 = torch.cat([torch.neg(w1), w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


def pattern(a1, a2):
    return torch.cat([torch.neg(a1), a2]).sum()


def replacement(w1, w2):
    return torch.stack([w1, w2])


def test_replace_pattern_code_and_matches():
    """The subgraph_rewriter example: both occurrences replaced, torch.fx's code and Match records."""
    traced = fx.symbolic_trace(M())
    matches = fx.replace_pattern(traced, pattern, replacement)
    assert traced.code == (
        "\n\n\ndef forward(self, x, w1, w2):\n"
        "    stack = torch.stack([w1, w2])\n"
        "    max_1 = torch.max(stack);  stack = None\n"
        "    add = x + max_1;  x = max_1 = None\n"
        "    stack_1 = torch.stack([w1, w2]);  w1 = w2 = None\n"
        "    max_2 = torch.max(stack_1);  stack_1 = None\n"
        "    add_1 = add + max_2;  add = max_2 = None\n"
        "    return add_1\n    ")
    assert repr(matches) == ("[Match(anchor=sum_1, nodes_map={sum_1: sum_1, cat: cat, neg: neg, a1: w1, a2: w2}), "
                             "Match(anchor=sum_1, nodes_map={sum_1: sum_2, cat: cat_1, neg: neg_1, a1: w1, a2: w2})]")
    x, w1, w2 = torch.tensor([1.0]), torch.tensor([2.0, -1.0]), torch.tensor([0.5, 3.0])
    assert traced(x, w1, w2).tolist() == [1.0 + 3.0 + 3.0]


def test_match_needs_private_intermediates():
    """An occurrence whose inner value is used elsewhere is not replaced."""
    def f(x):
        a = x + 1
        return torch.relu(a) * 2 + a

    def pat(v):
        return torch.relu(v + 1)
    gm = fx.symbolic_trace(f)
    assert fx.replace_pattern(gm, pat, lambda v: torch.sigmoid(v)) == []
    assert "relu" in gm.code


def test_repeated_input_and_literals_must_agree():
    """A pattern input used twice matches one value; literal arguments must be equal."""
    def f(x, y):
        return torch.mul(x, x) + torch.mul(x, y) + (x + 2) + (x + 3)

    def square(a):
        return torch.mul(a, a)

    def plus2(a):
        return a + 2
    gm = fx.symbolic_trace(f)
    assert len(fx.replace_pattern(gm, square, lambda a: torch.pow(a, 2))) == 1
    assert len(fx.replace_pattern(gm, plus2, lambda a: a - 2)) == 1
    x, y = np.array([1.5, -2.0]), np.array([0.5, 4.0])
    np.testing.assert_allclose(gm(torch.tensor(x), torch.tensor(y)).numpy(),
                               x ** 2 + x * y + (x - 2) + (x + 3), rtol=1e-6)
