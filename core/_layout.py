"""Memory layouts (torch.layout): a dense tensor's `layout` is `tensorplug.strided`, a sparse COO
tensor's (tensorplug.sparse) `tensorplug.sparse_coo`. The other sparse layouts (CSR, CSC, BSR, BSC) and
`_mkldnn` / `jagged` exist as names only, for code that compares with them (`t.layout != torch.strided`,
as safetensors checks) and for pickles that name them."""
from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn",
           "jagged"]


class layout:
    """One memory layout, printed as dtypes are (`tensorplug.strided`)."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"tensorplug.{self._name}"

    def __reduce__(self):               # a layout is a singleton: unpickled by name
        return (_by_name, (self._name,))


def _by_name(name):
    return globals()[name]


strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc, _mkldnn, jagged = (
    layout(n) for n in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn",
                        "jagged"))
