"""Variable-length sequences for recurrent layers: PackedSequence and the pad/pack helpers.

    x = pad_sequence([a, b, c])                       # (T_max, B, *) with zeros after each end
    packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
    y, lengths = pad_packed_sequence(packed)          # back to (T_max, B, *)

A PackedSequence stores the time steps of all sequences interleaved: `data` holds step 0 of
every sequence (longest first), then step 1 of those at least 2 long, ...; `batch_sizes[t]`
(an int64 CPU tensor) is how many sequences have a step t. `sorted_indices` is the order of
the batch by decreasing length (None when the input already was), `unsorted_indices` its
inverse. Every helper is built from differentiable Tensor ops.
"""
from __future__ import annotations

from collections import namedtuple

from ... import dtypes as _dt
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a permutation given as an index tensor (None stays None)."""
    if permutation is None:
        return None
    from ...ops.creation import arange, empty_like
    output = empty_like(permutation)
    output.scatter_(0, permutation, arange(0, permutation.numel(), device=permutation.device))
    return output


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices); build it with pack_padded_sequence or
    pack_sequence rather than directly."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PackedSequence((data, batch_sizes)): the legacy tuple form
            if isinstance(data, (list, tuple)) and len(data) == 2:
                data, batch_sizes = data
            else:
                raise TypeError("PackedSequence needs batch_sizes (or a (data, batch_sizes) tuple)")
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never "
                             "be created manually. They should be instantiated by functions like "
                             "pack_sequence and pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """Move/convert `data` (indices follow data's device; batch_sizes stays on the CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices = self.sorted_indices
        unsorted_indices = self.unsorted_indices
        if sorted_indices is not None:
            sorted_indices = sorted_indices.to(device=data.device)
        if unsorted_indices is not None:
            unsorted_indices = unsorted_indices.to(device=data.device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs):
        return self.to(*(("cuda",) + args), **kwargs) if not args else self.to(
            f"cuda:{args[0]}" if isinstance(args[0], int) else args[0], **kwargs)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=_dt.float64)

    def float(self):
        return self.to(dtype=_dt.float32)

    def half(self):
        return self.to(dtype=_dt.float16)

    def long(self):
        return self.to(dtype=_dt.int64)

    def int(self):
        return self.to(dtype=_dt.int32)

    def short(self):
        return self.to(dtype=_dt.int16)

    def char(self):
        return self.to(dtype=_dt.int8)

    def byte(self):
        return self.to(dtype=_dt.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D tensor, but got a {lengths.ndim}D tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _batch_sizes_of(lengths):
    """batch_sizes[t] = how many of the (decreasing) lengths exceed t."""
    max_len = lengths[0] if lengths else 0
    out = []
    j = len(lengths)
    for t in range(max_len):
        while j > 0 and lengths[j - 1] <= t:
            j -= 1
        out.append(j)
    return out


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) with batch_first) of sequences with the given
    lengths. With enforce_sorted=True the lengths must be decreasing; otherwise the batch is
    sorted here and the order is remembered in the result."""
    from ...ops.creation import tensor
    from ...ops.shape import cat
    lens = _lengths_list(lengths)
    if isinstance(lengths, Tensor) and lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got 1D {lengths.device} "
                           f"{lengths.dtype} tensor")
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2:
        raise RuntimeError(f"pack_padded_sequence: input must have at least 2 dimensions, got {input.ndim}")
    if len(lens) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={input.shape[batch_dim]})")
    if any(v <= 0 for v in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if enforce_sorted:
        sorted_indices = None
        if any(lens[i] < lens[i + 1] for i in range(len(lens) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                               "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                               "pack_sequence to sidestep this requirement if you do not need ONNX "
                               "exportability.")
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])   # stable: ties keep their order
        lens = [lens[i] for i in order]
        sorted_indices = tensor(order, dtype=_dt.int64, device=input.device)
        input = input.index_select(batch_dim, sorted_indices)
    if lens[0] > input.shape[1 - batch_dim]:
        raise RuntimeError(f"pack_padded_sequence: a length ({lens[0]}) exceeds the padded sequence length "
                           f"({input.shape[1 - batch_dim]})")
    if batch_first:
        input = input.transpose(0, 1)
    bs = _batch_sizes_of(lens)
    data = cat([input[t, :b] for t, b in enumerate(bs)], 0)
    batch_sizes = tensor(bs, dtype=_dt.int64)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths as an int64 CPU tensor),
    in the batch's original order. total_length pads T to that length."""
    from ...ops.creation import full, tensor
    from ...ops.shape import cat, stack
    data, batch_sizes = sequence.data, sequence.batch_sizes
    bs = [int(v) for v in batch_sizes.tolist()]
    max_seq_length = len(bs)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in "
                             f"input, but got total_length={total_length} and max sequence length being "
                             f"{max_seq_length}")
        max_seq_length = total_length
    B = bs[0] if bs else 0
    feat = tuple(data.shape[1:])
    steps = []
    offset = 0
    for b in bs:
        chunk = data[offset:offset + b]
        offset += b
        if b < B:
            chunk = cat([chunk, full((B - b,) + feat, padding_value, dtype=data.dtype, device=data.device)], 0)
        steps.append(chunk)
    for _ in range(max_seq_length - len(bs)):
        steps.append(full((B,) + feat, padding_value, dtype=data.dtype, device=data.device))
    padded = stack(steps, 0)
    lengths = [sum(1 for b in bs if b > i) for i in range(B)]
    if batch_first:
        padded = padded.transpose(0, 1)
    lengths_t = tensor(lengths, dtype=_dt.int64)
    if sequence.unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        unsorted = sequence.unsorted_indices
        padded = padded.index_select(batch_dim, unsorted.to(device=padded.device))
        lengths_t = tensor([lengths[i] for i in unsorted.tolist()], dtype=_dt.int64)
    return padded, lengths_t


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences (L_i, *) into (L_max, B, *) ((B, L_max, *) with batch_first), padding with
    padding_value on the right (or the left with padding_side='left')."""
    from ...ops.creation import full
    from ...ops.shape import cat, stack
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    out = []
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"The size of tensor a ({s.shape[1:]}) must match the size of tensor b "
                               f"({trailing}) in pad_sequence: trailing dimensions must be equal")
        n = max_len - s.shape[0]
        if n:
            pad = full((n,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        out.append(s)
    return stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of sequences of the given lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:length] for seq, length in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences (L_i, *) (decreasing lengths unless enforce_sorted=False)."""
    lengths = [v.size(0) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
