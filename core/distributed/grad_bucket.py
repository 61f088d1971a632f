"""GradBucket: what a DistributedDataParallel communication hook receives (PyTorch's
torch.distributed.GradBucket): one bucket's gradients, flattened into one 1-D tensor.

    def hook(state, bucket):                       # ddp.register_comm_hook(state, hook)
        t = bucket.buffer().div_(world_size)
        fut = all_reduce_future(t)                 # a Future of the reduced flat tensor
        return fut
"""
from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """index(): the bucket's position (bucket 0 holds the last parameters, whose gradients come
    first); buffer(): the flat tensor of its gradients (write it in place, or `set_buffer`);
    gradients(): one view of buffer() per parameter, shaped like it; parameters(): the
    parameters, in bucket order; is_last(): whether this is the last bucket of the iteration."""
    __slots__ = ("_index", "_buffer", "_params", "_views", "_last")

    def __init__(self, index, buffer, parameters, views, is_last):
        self._index = index
        self._buffer = buffer
        self._params = parameters
        self._views = views
        self._last = is_last

    def index(self) -> int:
        return self._index

    def buffer(self):
        return self._buffer

    def gradients(self):
        return list(self._views)

    def parameters(self):
        return list(self._params)

    def is_last(self) -> bool:
        return self._last

    def set_buffer(self, buffer) -> None:
        if tuple(buffer.shape) != tuple(self._buffer.shape) or buffer.dtype != self._buffer.dtype:
            raise ValueError(f"GradBucket.set_buffer: expected a {self._buffer.dtype} tensor of shape "
                             f"{list(self._buffer.shape)}, got {buffer.dtype} of shape {list(buffer.shape)}")
        self._buffer = buffer

    def __repr__(self):
        return f"<GradBucket {self._index}: {len(self._params)} parameters, {self._buffer.numel()} elements>"
