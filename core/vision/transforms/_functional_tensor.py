"""The tensor side of transforms.functional: images are (..., C, H, W) tensors, uint8 (0..255) or floating
(0..1). Everything is written with tensorplug ops, so float images keep their autograd history (normalize,
resize, affine, blur, the colour blends are differentiable); integer images are computed in float32 and
rounded back, as torchvision does."""
from __future__ import annotations

import numpy as np

import tensorplug as tp
from tensorplug import Tensor

_INT_MAX = {"uint8": 255, "int8": 127, "int16": 32767, "uint16": 65535, "int32": 2147483647,
            "int64": 9223372036854775807}


def max_value(dtype) -> int:
    """The value of full intensity: 255 for uint8, ..., 1 for floating images."""
    return _INT_MAX.get(dtype.name if hasattr(dtype, "name") else str(dtype), 1)


def assert_image(img, fn: str = "") -> None:
    if not isinstance(img, Tensor):
        raise TypeError(f"{fn}(): img should be a Tensor or a PIL Image. Got {type(img)}")
    if img.ndim < 2:
        raise TypeError(f"Tensor is not a torch image: expected (..., C, H, W) or (H, W), got shape "
                        f"{tuple(img.shape)}")


def get_dimensions(img) -> list:
    assert_image(img, "get_dimensions")
    c = 1 if img.ndim == 2 else int(img.shape[-3])
    return [c, int(img.shape[-2]), int(img.shape[-1])]


def _assert_channels(img, permitted, fn):
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"{fn}(): input image tensor permitted channel values are {permitted}, but found {c}")


def _work_dtype(img):
    return img.dtype if img.is_floating_point() else tp.float32


def _to_float(img):
    """(N, C, H, W) floating batch, and how to undo: (squeezed?, original dtype)."""
    x = img.unsqueeze(0) if img.ndim == 3 else (img.reshape(1, 1, *img.shape) if img.ndim == 2 else img)
    lead = tuple(img.shape[:-3]) if img.ndim > 4 else None
    if lead is not None:                   # (..., C, H, W): fold the leading dims into one batch
        x = img.reshape(-1, *img.shape[-3:])
    dtype = img.dtype
    if not x.is_floating_point():
        x = x.to(tp.float32)
    return x, (img.ndim, lead, dtype)


def _from_float(x, undo):
    ndim, lead, dtype = undo
    if ndim == 3:
        x = x.squeeze(0)
    elif ndim == 2:
        x = x.reshape(*x.shape[-2:])
    elif lead is not None:
        x = x.reshape(*lead, *x.shape[-3:])
    if x.dtype != dtype:
        if not dtype.is_floating_point:
            x = x.round()          # round before the cast back to integers
        x = x.to(dtype)
    return x


def convert_image_dtype(image, dtype=tp.float32):
    if not isinstance(image, Tensor):
        raise TypeError(f"convert_image_dtype(): expected a Tensor, got {type(image).__name__}")
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == tp.float32 and dtype in (tp.int32, tp.int64)) or \
                (image.dtype == tp.float64 and dtype == tp.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        # max + 1 - eps maps [0, 1] evenly onto the integers (only exactly 1.0 becomes max)
        return image.mul(float(max_value(dtype)) + 1.0 - 1e-3).to(dtype)
    in_max = max_value(image.dtype)
    if dtype.is_floating_point:
        return image.to(dtype) / float(in_max)
    out_max = max_value(dtype)
    if in_max > out_max:
        return tp.div(image, (in_max + 1) // (out_max + 1), rounding_mode="floor").to(dtype)
    return image.to(dtype) * ((out_max + 1) // (in_max + 1))


# -- geometry ---------------------------------------------------------------------------------------------
def vflip(img):
    assert_image(img, "vflip")
    return img.flip(-2)


def hflip(img):
    assert_image(img, "hflip")
    return img.flip(-1)


def crop(img, top, left, height, width):
    """A window; parts outside the image are zero-filled (torchvision's behaviour)."""
    assert_image(img, "crop")
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        inner = img[..., max(top, 0):bottom, max(left, 0):right]
        ltrb = [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                max(right - max(w, left), 0), max(bottom - max(h, top), 0)]
        return pad(inner, ltrb, 0, "constant")
    return img[..., top:bottom, left:right]


def _symmetric_index(n, before, after):
    i = np.arange(-before, n + after)
    period = 2 * n
    i = np.mod(i, period)
    return np.where(i >= n, period - 1 - i, i)


def pad(img, ltrb, fill=0, padding_mode="constant"):
    """ltrb: [left, top, right, bottom]; negative widths crop. Modes: constant, edge, reflect, symmetric."""
    assert_image(img, "pad")
    if fill is None:
        fill = 0
    if not isinstance(fill, (int, float)):
        raise TypeError(f"pad(): fill should be an int or float for tensor images, got {type(fill).__name__}")
    left, top, right, bottom = ltrb
    if min(ltrb) < 0:
        _, h, w = get_dimensions(img)
        img = img[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
        left, top, right, bottom = (max(v, 0) for v in ltrb)
    if padding_mode == "symmetric":
        _, h, w = get_dimensions(img)
        rows = tp.tensor(_symmetric_index(h, top, bottom), device=img.device)
        cols = tp.tensor(_symmetric_index(w, left, right), device=img.device)
        return img.index_select(-2, rows).index_select(-1, cols)
    x, undo = _to_float(img) if padding_mode != "constant" else (None, None)
    if padding_mode == "constant":
        squeeze = img.ndim < 4
        x = img.unsqueeze(0) if img.ndim == 3 else (img.reshape(1, 1, *img.shape) if img.ndim == 2 else img)
        out = tp.nn.functional.pad(x, [left, right, top, bottom], mode="constant", value=float(fill))
        return out.reshape(*img.shape[:-2], *out.shape[-2:]) if squeeze or img.ndim > 4 else out
    mode = "replicate" if padding_mode == "edge" else "reflect"
    return _from_float(tp.nn.functional.pad(x, [left, right, top, bottom], mode=mode), undo)


def _filter_weights(n_in, n_out, mode):
    """(n_out, n_in) resampling matrix of an antialiased resize: the filter is widened by the scale when
    shrinking, each row normalised to sum 1 (Pillow's and PyTorch's antialias scheme)."""
    scale = n_in / n_out
    if mode == "bilinear":
        size, f = 1.0, lambda x: np.clip(1.0 - np.abs(x), 0.0, None)
    else:
        size, a = 2.0, -0.5

        def f(x):
            x = np.abs(x)
            return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                            np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))
    support = size * scale if scale >= 1.0 else size
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    W = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        j = np.arange(lo, hi)
        w = f((j - center + 0.5) * inv)
        total = w.sum()
        W[i, lo:hi] = w / total if total != 0 else w
    return W


def resize(img, size_hw, interpolation="bilinear", antialias=True):
    assert_image(img, "resize")
    if antialias and interpolation not in ("bilinear", "bicubic"):
        antialias = False                     # meaningless for the other modes (torchvision ignores it)
    x, undo = _to_float(img)
    h, w = int(x.shape[-2]), int(x.shape[-1])
    oh, ow = int(size_hw[0]), int(size_hw[1])
    if antialias:
        wh = tp.tensor(_filter_weights(h, oh, interpolation), dtype=x.dtype, device=x.device)
        ww = tp.tensor(_filter_weights(w, ow, interpolation).T, dtype=x.dtype, device=x.device)
        out = tp.matmul(tp.matmul(wh, x), ww)
    else:
        ac = False if interpolation in ("bilinear", "bicubic") else None
        out = tp.nn.functional.interpolate(x, size=[oh, ow], mode=interpolation, align_corners=ac)
    if interpolation == "bicubic" and undo[2] == tp.uint8:
        out = out.clamp(0, 255)
    return _from_float(out, undo)


def _affine_grid(theta, w, h, ow, oh):
    """Sampling grid of an affine map given in pixel units about the image centre (theta: 2x3 list),
    normalised to grid_sample's [-1, 1] with align_corners=False; the output may be larger (expand)."""
    dt = tp.float32
    xs = tp.linspace(-ow * 0.5 + 0.5, ow * 0.5 - 0.5, steps=ow, dtype=dt)
    ys = tp.linspace(-oh * 0.5 + 0.5, oh * 0.5 - 0.5, steps=oh, dtype=dt)
    base = tp.stack([xs.unsqueeze(0).expand(oh, ow), ys.unsqueeze(1).expand(oh, ow), tp.ones(oh, ow, dtype=dt)], -1)
    t = tp.tensor(theta, dtype=dt).reshape(2, 3).transpose(0, 1) / tp.tensor([0.5 * w, 0.5 * h], dtype=dt)
    return tp.matmul(base.reshape(1, oh * ow, 3), t).reshape(1, oh, ow, 2)


def _grid_transform(img, grid, mode, fill):
    x, undo = _to_float(img)
    grid = grid.to(x.dtype).to(x.device)
    n = int(x.shape[0])
    if n > 1:
        grid = grid.expand(n, *grid.shape[1:])
    if fill is not None:             # a ones channel tells, after sampling, how much of a pixel came from inside
        x = tp.cat([x, tp.ones(n, 1, *x.shape[2:], dtype=x.dtype, device=x.device)], 1)
    out = tp.nn.functional.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        mask, out = out[:, -1:], out[:, :-1]
        vals = list(fill) if isinstance(fill, (list, tuple)) else [float(fill)]
        fill_img = tp.tensor([float(v) for v in vals], dtype=out.dtype, device=out.device).reshape(1, len(vals), 1, 1)
        if mode == "nearest":
            out = tp.where(mask.expand_as(out) < 0.5, fill_img.expand_as(out), out)
        else:
            out = out * mask + (1.0 - mask) * fill_img
    return _from_float(out, undo)


def _check_fill(img, fill):
    c = get_dimensions(img)[0]
    if isinstance(fill, (list, tuple)) and len(fill) > 1 and len(fill) != c:
        raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number of channels of "
                         f"the image ({len(fill)} != {c})")


def affine(img, matrix, interpolation="nearest", fill=None):
    assert_image(img, "affine")
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")
    _check_fill(img, fill)
    h, w = int(img.shape[-2]), int(img.shape[-1])
    return _grid_transform(img, _affine_grid(matrix, w, h, w, h), interpolation, fill)


def affine_output_size(matrix, w, h):
    """(width, height) that holds the whole transformed image (rotate(expand=True)), as Pillow computes it."""
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, -0.5 * h, 1.0]], dtype=np.float32)
    new = pts @ np.asarray(matrix, dtype=np.float32).reshape(2, 3).T
    lo = new.min(0) + np.array([w * 0.5, h * 0.5], dtype=np.float32)
    hi = new.max(0) + np.array([w * 0.5, h * 0.5], dtype=np.float32)
    tol = np.float32(1e-4)                       # keeps a ceil of 1e-15 from adding a pixel
    size = np.ceil(np.trunc(hi / tol) * tol) - np.floor(np.trunc(lo / tol) * tol)
    return int(size[0]), int(size[1])


def rotate(img, matrix, interpolation="nearest", expand=False, fill=None):
    assert_image(img, "rotate")
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")
    _check_fill(img, fill)
    h, w = int(img.shape[-2]), int(img.shape[-1])
    ow, oh = affine_output_size(matrix, w, h) if expand else (w, h)
    return _grid_transform(img, _affine_grid(matrix, w, h, ow, oh), interpolation, fill)


def _gaussian_kernel1d(k, sigma, dtype):
    half = (k - 1) * 0.5
    x = tp.linspace(-half, half, steps=k, dtype=dtype)
    pdf = tp.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def gaussian_blur(img, kernel_size, sigma):
    assert_image(img, "gaussian_blur")
    x, undo = _to_float(img)
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0], x.dtype)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1], x.dtype)
    c = int(x.shape[1])
    kernel = (ky.unsqueeze(1) * kx.unsqueeze(0)).expand(c, 1, kernel_size[1], kernel_size[0]).to(x.device)
    px, py = kernel_size[0] // 2, kernel_size[1] // 2
    x = tp.nn.functional.pad(x, [px, px, py, py], mode="reflect")
    return _from_float(tp.nn.functional.conv2d(x, kernel, groups=c), undo)


# -- colour -----------------------------------------------------------------------------------------------
def _blend(a, b, ratio):
    ratio = float(ratio)
    out = ratio * a + (1.0 - ratio) * b
    return out.clamp(0, max_value(a.dtype)).to(a.dtype)


def rgb_to_grayscale(img, num_output_channels=1):
    assert_image(img, "rgb_to_grayscale")
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3], "rgb_to_grayscale")
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(-3)
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(-3)   # ITU-R 601-2 luma
    else:
        gray = img.clone()
    return gray.expand(img.shape) if num_output_channels == 3 else gray


def adjust_brightness(img, f):
    assert_image(img, "adjust_brightness")
    _assert_channels(img, [1, 3], "adjust_brightness")
    return _blend(img, tp.zeros_like(img), f)


def adjust_contrast(img, f):
    assert_image(img, "adjust_contrast")
    _assert_channels(img, [1, 3], "adjust_contrast")
    dt = _work_dtype(img)
    gray = rgb_to_grayscale(img) if get_dimensions(img)[0] == 3 else img
    mean = gray.to(dt).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, f)


def adjust_saturation(img, f):
    assert_image(img, "adjust_saturation")
    _assert_channels(img, [1, 3], "adjust_saturation")
    if get_dimensions(img)[0] == 1:
        return img
    return _blend(img, rgb_to_grayscale(img), f)


def _rgb_to_hsv(img):
    r, g, b = img.unbind(-3)
    maxc = img.amax(dim=-3)
    minc = img.amin(dim=-3)
    eq = maxc == minc
    cr = maxc - minc
    ones = tp.ones_like(maxc)
    s = cr / tp.where(eq, ones, maxc)
    crd = tp.where(eq, ones, cr)        # grey pixels: any non-zero divisor (their hue is 0 either way)
    rc, gc, bc = (maxc - r) / crd, (maxc - g) / crd, (maxc - b) / crd
    is_r = maxc == r
    is_g = (maxc == g) & ~is_r
    is_b = ~is_r & ~(maxc == g)
    h = is_r.to(img.dtype) * (bc - gc) + is_g.to(img.dtype) * (2.0 + rc - bc) + is_b.to(img.dtype) * (4.0 + gc - rc)
    h = tp.fmod(h / 6.0 + 1.0, 1.0)
    return h, s, maxc


def _hsv_to_rgb(h, s, v):
    i6 = tp.floor(h * 6.0)
    f = h * 6.0 - i6
    sector = tp.remainder(i6.to(tp.int32), 6)
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    table = ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))   # r, g, b per sector 0..5
    onehot = [(sector == k).to(h.dtype) for k in range(6)]
    chans = []
    for row in table:
        acc = onehot[0] * row[0]
        for k in range(1, 6):
            acc = acc + onehot[k] * row[k]
        chans.append(acc)
    return tp.stack(chans, -3)


def adjust_hue(img, hue_factor):
    assert_image(img, "adjust_hue")
    _assert_channels(img, [1, 3], "adjust_hue")
    if get_dimensions(img)[0] == 1:
        return img
    dtype = img.dtype
    x = convert_image_dtype(img, tp.float32)
    h, s, v = _rgb_to_hsv(x)
    h = tp.remainder(h + hue_factor, 1.0)
    return convert_image_dtype(_hsv_to_rgb(h, s, v), dtype)


def adjust_gamma(img, gamma, gain=1.0):
    assert_image(img, "adjust_gamma")
    _assert_channels(img, [1, 3], "adjust_gamma")
    dtype = img.dtype
    x = img if img.is_floating_point() else convert_image_dtype(img, tp.float32)
    return convert_image_dtype((gain * x.pow(gamma)).clamp(0, 1), dtype)


def adjust_sharpness(img, f):
    assert_image(img, "adjust_sharpness")
    _assert_channels(img, [1, 3], "adjust_sharpness")
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    # the "degenerate" image: a 3x3 smoothing (centre weight 5/13) inside, the border pixels unchanged
    x, undo = _to_float(img)
    c = int(x.shape[1])
    k = tp.ones(3, 3, dtype=x.dtype)
    k = tp.where(tp.tensor([[False, False, False], [False, True, False], [False, False, False]]),
                 tp.full((3, 3), 5.0, dtype=x.dtype), k) / 13.0
    inner = _from_float(tp.nn.functional.conv2d(x, k.expand(c, 1, 3, 3).to(x.device), groups=c), undo)
    ph, pw = int(img.shape[-2]) - 2, int(img.shape[-1]) - 2
    border = tp.ones(ph, pw, dtype=tp.bool, device=img.device)
    inside = tp.nn.functional.pad(border.to(tp.float32), [1, 1, 1, 1]).to(tp.bool)
    degenerate = tp.where(inside, pad(inner, [1, 1, 1, 1], 0, "constant"), img)
    return _blend(img, degenerate, f)


def invert(img):
    assert_image(img, "invert")
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3], "invert")
    if img.dtype == tp.bool:
        return ~img
    return max_value(img.dtype) - img


def posterize(img, bits):
    assert_image(img, "posterize")
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    if img.dtype != tp.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3], "posterize")
    return img & -int(2 ** (8 - bits))          # clear the 8 - bits low bits


def solarize(img, threshold):
    assert_image(img, "solarize")
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3], "solarize")
    if threshold > max_value(img.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    return tp.where(img >= threshold, invert(img), img)


def autocontrast(img):
    assert_image(img, "autocontrast")
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3], "autocontrast")
    bound = max_value(img.dtype)
    dt = _work_dtype(img)
    lo = img.amin(dim=(-2, -1), keepdim=True).to(dt)
    hi = img.amax(dim=(-2, -1), keepdim=True).to(dt)
    flat = hi == lo                        # a constant channel is left as it is
    scale = tp.where(flat, tp.ones_like(hi), bound / tp.where(flat, tp.ones_like(hi), hi - lo))
    lo = tp.where(flat, tp.zeros_like(lo), lo)
    return ((img.to(dt) - lo) * scale).clamp(0, bound).to(img.dtype)


def _equalize_channel(ch):
    hist = tp.bincount(ch.reshape(-1).to(tp.int64), minlength=256)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum().item()) // 255
    if step == 0:
        return ch
    lut = tp.div(tp.cumsum(hist, 0) + step // 2, step, rounding_mode="floor")
    lut = tp.cat([tp.zeros(1, dtype=lut.dtype, device=lut.device), lut[:-1]]).clamp(0, 255)
    return lut[ch.to(tp.int64)].to(tp.uint8)


def equalize(img):
    assert_image(img, "equalize")
    if not 3 <= img.ndim <= 4:
        raise TypeError(f"Input image tensor should have 3 or 4 dimensions, but found {img.ndim}")
    if img.dtype != tp.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3], "equalize")
    if img.ndim == 3:
        return tp.stack([_equalize_channel(img[c]) for c in range(img.shape[0])])
    return tp.stack([equalize(x) for x in img.unbind(0)])


def normalize(tensor, mean, std, inplace=False):
    assert_image(tensor, "normalize")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tuple(tensor.shape)}")
    m = tp.as_tensor(mean, dtype=tensor.dtype, device=tensor.device)
    s = tp.as_tensor(std, dtype=tensor.dtype, device=tensor.device)
    if bool((s == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    if m.ndim == 1:
        m = m.reshape(-1, 1, 1)
    if s.ndim == 1:
        s = s.reshape(-1, 1, 1)
    if inplace:
        return tensor.sub_(m).div_(s)
    return (tensor - m) / s


def erase(img, i, j, h, w, v, inplace=False):
    assert_image(img, "erase")
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img

