"""The built-in DistributedDataParallel communication hooks (state: the process group, None for the
world).

    from tensorplug.distributed.algorithms.ddp_comm_hooks import default_hooks
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)   # half the bytes on the wire

allreduce_hook: what DDP does without a hook (divide by the world size, sum over the ranks).
fp16_compress_hook: the same in float16 - each rank's gradients are cast to float16 and divided by
the world size, summed over the ranks in float16, and cast back to the bucket's dtype.
"""
from __future__ import annotations


__all__ = ["allreduce_hook", "fp16_compress_hook"]


def _all_reduce_future(tensor, process_group):
    """Start an all-reduce (sum) of `tensor`; a Future of [tensor], reduced."""
    import tensorplug.distributed as dist
    return dist.all_reduce(tensor, group=process_group, async_op=True).get_future()


def _world_size(process_group):
    import tensorplug.distributed as dist
    return dist.get_world_size(process_group)


def allreduce_hook(process_group, bucket):
    """Average the bucket over the ranks: a Future of the bucket's buffer, reduced in place."""
    tensor = bucket.buffer()
    tensor.div_(_world_size(process_group))
    return _all_reduce_future(tensor, process_group).then(lambda fut: fut.value()[0])


def fp16_compress_hook(process_group, bucket):
    """Average the bucket over the ranks in float16: a Future of the bucket's buffer holding the
    result, cast back to its dtype."""
    from .... import dtypes
    buffer = bucket.buffer()
    compressed = buffer.to(dtypes.float16).div_(_world_size(process_group))

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return _all_reduce_future(compressed, process_group).then(decompress)
