"""tensorplug.vision.io (torchvision.io): images as uint8 C x H x W tensors, read and written through Pillow.

Files are 1-D uint8 tensors of their bytes (read_file / write_file); decode_* turn them into images and
encode_* back. Errors are RuntimeErrors naming the file or the problem, as torchvision's are.
Differences from torchvision's libpng / libjpeg: ImageReadMode.GRAY of a colour image is Pillow's
conversion (ITU-R 601, 8-bit fixed point), which can differ from libpng's by 1; JPEG bytes written by
encode_jpeg are valid JPEG but not byte-identical to libjpeg-turbo's; a 16-bit PNG read UNCHANGED is an
int32 tensor of its values (torchvision: uint16, which tensorplug has no dtype for).
"""
from __future__ import annotations

import enum
import io as _io
import os

import numpy as np

__all__ = ["ImageReadMode", "read_file", "write_file", "decode_image", "decode_png", "decode_jpeg", "encode_png",
           "encode_jpeg", "write_png", "write_jpeg", "read_image"]


class ImageReadMode(enum.Enum):
    """How decode_image converts: UNCHANGED keeps the file's channels."""
    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


_PIL_MODE = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
             ImageReadMode.RGB_ALPHA: "RGBA"}
_FORMATS = ("JPEG", "PNG", "WEBP", "GIF")
_UNSUPPORTED = ("Unsupported image file. Only jpeg, png, webp and gif are currently supported.")


def _tp():
    import tensorplug
    return tensorplug


def _pil():
    from .datasets.vision import pil_image
    return pil_image()


def _mode(mode) -> ImageReadMode:
    if isinstance(mode, ImageReadMode):
        return mode
    if isinstance(mode, str) and mode.upper() in ImageReadMode.__members__:
        return ImageReadMode[mode.upper()]
    raise ValueError(f"mode must be an ImageReadMode or one of {', '.join(ImageReadMode.__members__)}, got {mode!r}")


def read_file(path) -> "tensorplug.Tensor":
    """The bytes of the file at `path` as a 1-D uint8 tensor."""
    try:
        with open(os.fspath(path), "rb") as f:
            data = f.read()
    except OSError as e:
        raise RuntimeError(f"read_file: {e}") from e
    return _tp().from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def _bytes_of(data, name: str) -> bytes:
    tp = _tp()
    if not isinstance(data, tp.Tensor):
        raise TypeError(f"{name}: expected a tensor, got {type(data).__name__}")
    if data.dtype != tp.uint8:
        raise RuntimeError(f"{name}: Expected a torch.uint8 tensor, got {data.dtype}")
    if data.dim() != 1:
        raise RuntimeError(f"{name}: Expected a one dimensional tensor, got {data.dim()} dimensions")
    return np.ascontiguousarray(data.detach().cpu().numpy()).tobytes()


def write_file(filename, data) -> None:
    """Write the 1-D uint8 tensor `data` to `filename`."""
    raw = _bytes_of(data, "write_file")
    with open(os.fspath(filename), "wb") as f:
        f.write(raw)


def _decode(raw: bytes, mode, apply_exif_orientation: bool, source: str, only=None):
    Image = _pil()
    mode = _mode(mode)
    try:
        img = Image.open(_io.BytesIO(raw))
        if img.format not in (only or _FORMATS):
            raise RuntimeError(f"{source}: {_UNSUPPORTED}" if only is None
                               else f"{source}: not a {only[0]} file (it is {img.format})")
        img.load()
        if apply_exif_orientation:
            from PIL import ImageOps
            img = ImageOps.exif_transpose(img)
    except RuntimeError:
        raise
    except Image.UnidentifiedImageError as e:
        raise RuntimeError(f"{source}: {_UNSUPPORTED}") from e
    except (OSError, SyntaxError, ValueError, EOFError) as e:      # truncated or damaged data
        raise RuntimeError(f"{source}: cannot decode the image ({type(e).__name__}: {e})") from e
    if mode is ImageReadMode.UNCHANGED and img.mode in ("I;16", "I;16B", "I;16L", "I;16N"):
        # a 16-bit grey PNG keeps its values: torchvision gives uint16, a dtype tensorplug lacks -> int32
        arr = np.asarray(img).astype(np.int32)[None]
        return _tp().from_numpy(np.ascontiguousarray(arr))
    if mode is ImageReadMode.UNCHANGED:
        if img.mode in ("1", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
            target = "L"
        elif img.mode == "P":          # a palette expands to RGB, or RGBA when it has transparency
            target = "RGBA" if "transparency" in img.info else "RGB"
        elif img.mode in ("CMYK", "YCbCr", "LAB", "HSV"):
            target = "RGB"
        elif img.mode == "PA":
            target = "RGBA"
        else:
            target = img.mode
    else:
        target = _PIL_MODE[mode]
    if img.mode != target:
        if img.mode == "P" and target in ("L", "LA"):
            img = img.convert("RGBA")
        img = img.convert(target)
    arr = np.asarray(img, dtype=np.uint8)
    arr = arr[None] if arr.ndim == 2 else np.moveaxis(arr, -1, 0)
    return _tp().from_numpy(np.ascontiguousarray(arr))


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False):
    """A JPEG, PNG, WebP or GIF image, given as its bytes (1-D uint8 tensor) or a path, as a uint8
    tensor (C, H, W); `mode` converts it (GRAY, GRAY_ALPHA, RGB, RGB_ALPHA)."""
    if isinstance(input, (str, os.PathLike)):
        path = os.fspath(input)
        return _decode(_bytes_of(read_file(path), "decode_image"), mode, apply_exif_orientation, path)
    return _decode(_bytes_of(input, "decode_image"), mode, apply_exif_orientation, "decode_image")


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False):
    """decode_image(read_file(path)): the image file at `path` as a uint8 tensor (C, H, W)."""
    path = os.fspath(path)
    return _decode(_bytes_of(read_file(path), "read_image"), mode, apply_exif_orientation, path)


def decode_png(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False):
    raw = _bytes_of(input, "decode_png")
    if len(raw) < 30:
        raise RuntimeError("decode_png: Content is too small for png!")
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        raise RuntimeError("decode_png: Content is not png!")
    return _decode(raw, mode, apply_exif_orientation, "decode_png", only=("PNG",))


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, device="cpu", apply_exif_orientation: bool = False):
    """A JPEG's bytes (or a list of them) as uint8 (C, H, W) tensors on `device`."""
    if isinstance(input, (list, tuple)):
        return [decode_jpeg(x, mode, device, apply_exif_orientation) for x in input]
    raw = _bytes_of(input, "decode_jpeg")
    if raw[:2] != b"\xff\xd8":
        head = " ".join(f"0x{b:02X}" for b in raw[:2])
        raise RuntimeError(f"decode_jpeg: Not a JPEG file: starts with {head}")
    out = _decode(raw, mode, apply_exif_orientation, "decode_jpeg", only=("JPEG", "MPO"))
    return out if str(device) == "cpu" else out.to(device)


def _image_array(input, name: str) -> np.ndarray:
    tp = _tp()
    if not isinstance(input, tp.Tensor):
        raise TypeError(f"{name}: expected a tensor, got {type(input).__name__}")
    if input.dtype != tp.uint8:
        raise RuntimeError(f"{name}: Input tensor dtype should be uint8")
    if input.dim() != 3:
        raise RuntimeError(f"{name}: Input data should be a 3-dimensional tensor")
    if input.shape[0] not in (1, 3):
        raise RuntimeError(f"{name}: The number of channels should be 1 or 3, got: {input.shape[0]}")
    arr = input.detach().cpu().numpy()
    return np.ascontiguousarray(arr[0] if arr.shape[0] == 1 else np.moveaxis(arr, 0, -1))


def _encoded(img, **save_args):
    buf = _io.BytesIO()
    img.save(buf, **save_args)
    return _tp().from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_png(input, compression_level: int = 6):
    """A uint8 (1 or 3, H, W) image as the bytes of a PNG file (1-D uint8 tensor)."""
    if not 0 <= compression_level <= 9:
        raise RuntimeError("encode_png: Compression level should be between 0 and 9")
    return _encoded(_pil().fromarray(_image_array(input, "encode_png")), format="PNG",
                    compress_level=int(compression_level))


def encode_jpeg(input, quality: int = 75):
    """A uint8 (1 or 3, H, W) image (or a list of them) as the bytes of a JPEG file."""
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if isinstance(input, (list, tuple)):
        return [encode_jpeg(x, quality) for x in input]
    return _encoded(_pil().fromarray(_image_array(input, "encode_jpeg")), format="JPEG", quality=int(quality))


def write_png(input, filename, compression_level: int = 6) -> None:
    write_file(filename, encode_png(input, compression_level))


def write_jpeg(input, filename, quality: int = 75) -> None:
    write_file(filename, encode_jpeg(input, quality))
