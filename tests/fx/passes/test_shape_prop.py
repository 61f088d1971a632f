"""ShapeProp: tensor_meta (shape, dtype, requires_grad, stride...) and type on every node."""
import tensorplug as torch
import tensorplug.fx as fx
from tensorplug.fx.passes.shape_prop import ShapeProp, TensorMetadata


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        y = self.lin(x)
        return y.double().t(), y.shape[0]


def test_metadata_per_node():
    """Each tensor-valued node gets its metadata; tuple outputs the same structure."""
    torch.manual_seed(0)
    gm = fx.symbolic_trace(M())
    x = torch.randn(2, 4)
    out = ShapeProp(gm).propagate(x)
    assert out[1] == 2
    meta = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert meta["x"] == TensorMetadata(torch.Size([2, 4]), torch.float32, False, (4, 1), meta["x"].memory_format,
                                       False, {})
    assert (tuple(meta["lin"].shape), meta["lin"].dtype, meta["lin"].requires_grad) == ((2, 3), torch.float32, True)
    assert (tuple(meta["t"].shape), meta["t"].dtype, meta["t"].stride) == ((3, 2), torch.float64, (1, 3))
    assert meta["getitem"] is None and meta["getattr_1"] is None
    out_meta = meta["output"]
    assert isinstance(out_meta, tuple) and isinstance(out_meta[0], TensorMetadata) and out_meta[1] == 2
    types = {n.name: n.meta["type"] for n in gm.graph.nodes}
    assert types["lin"] is torch.Tensor and types["getitem"] is int and types["output"] is tuple
