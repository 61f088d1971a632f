"""Argument checks and conversions shared by the RoI ops."""
import tensorplug
from tensorplug import Tensor


def _tensor(x, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(x).__name__}")
    return x


def check_roi_boxes_shape(boxes):
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if not (isinstance(b, Tensor) and b.ndim == 2 and b.shape[1] == 4):
                raise AssertionError("The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    elif isinstance(boxes, Tensor):
        if not (boxes.ndim == 2 and boxes.shape[1] == 5):
            raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    else:
        raise AssertionError("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def convert_boxes_to_roi_format(boxes: list) -> Tensor:
    """[Tensor[L_i, 4]] per image -> Tensor[sum L_i, 5] with the image index in column 0."""
    concat = tensorplug.cat(list(boxes), dim=0)
    ids = tensorplug.cat([tensorplug.full((b.shape[0], 1), float(i), dtype=concat.dtype, device=concat.device)
                          for i, b in enumerate(boxes)], dim=0)
    return tensorplug.cat([ids, concat], dim=1)


def _pair(v):
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    if len(v) == 1:
        return v[0], v[0]
    if len(v) != 2:
        raise ValueError(f"output_size must be an int or a pair of ints, got {v}")
    return int(v[0]), int(v[1])
