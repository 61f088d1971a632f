"""The weights API: Weights / WeightsEnum, the model registry, and fetching checkpoints by URL.

A checkpoint is downloaded once into `$TORCH_HOME/hub/checkpoints` (default ~/.cache/torch), the
place PyTorch uses, so files PyTorch already fetched are reused, and read with `tensorplug.load`."""
import fnmatch
import hashlib
import os
import re
import shutil
import sys
import tempfile
import typing
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from enum import Enum
from inspect import signature
from types import ModuleType
from typing import Any, Callable

__all__ = ["WeightsEnum", "Weights", "get_model", "get_model_builder", "get_model_weights", "get_weight",
           "list_models", "register_model", "load_state_dict_from_url", "WeightsDownloadError"]


@dataclass
class Weights:
    """One set of trained weights: where the file is, the preprocessing it expects, and facts about it."""
    url: str
    transforms: Callable
    meta: dict = field(default_factory=dict)

    def __eq__(self, other):        # identity-like: two enum members never alias by equal contents
        return self is other

    def __hash__(self):
        return id(self)


class WeightsEnum(Enum):
    """Base of the per-model enums (`ResNet18_Weights.IMAGENET1K_V1`, `.DEFAULT`)."""

    @classmethod
    def verify(cls, obj: Any) -> Any:
        if obj is not None:
            if isinstance(obj, str):
                obj = cls[obj.replace(cls.__name__ + ".", "")]
            elif not isinstance(obj, cls):
                raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} "
                                f"but received {obj.__class__.__name__}.")
        return obj

    def get_state_dict(self, *args: Any, **kwargs: Any):
        return load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self):
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self):
        return self.value.url

    @property
    def transforms(self):
        return self.value.transforms

    @property
    def meta(self):
        return self.value.meta


# -- checkpoints by URL ----------------------------------------------------------------------------
class WeightsDownloadError(urllib.error.URLError):
    """A checkpoint could not be fetched; the message says which file to place where."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


def _hub_dir() -> str:
    torch_home = os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(
        os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))
    return os.path.join(torch_home, "hub")


_HASH_PREFIX = re.compile(r"-([a-f0-9]*)\.")


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """The object saved in the file at `url`, downloaded into `model_dir` (default
    `$TORCH_HOME/hub/checkpoints`) unless it is there already. With check_hash, the file's SHA-256
    must start with the hex digits after the last '-' of its name (torchvision's naming)."""
    import tensorplug
    model_dir = model_dir or os.path.join(_hub_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.request.urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        prefix = None
        if check_hash:
            m = _HASH_PREFIX.search(filename)
            prefix = m.group(1) if m else None
        _download(url, cached, prefix, progress)
    return tensorplug.load(cached, map_location=map_location, weights_only=weights_only)


def _download(url, dst, hash_prefix, progress):
    tmp = tempfile.NamedTemporaryFile(delete=False, dir=os.path.dirname(dst), suffix=".partial")
    try:
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                total = int(resp.headers.get("Content-Length") or 0)
                sha, done = hashlib.sha256(), 0
                while True:
                    chunk = resp.read(1 << 20)
                    if not chunk:
                        break
                    tmp.write(chunk)
                    sha.update(chunk)
                    done += len(chunk)
                    if progress and total:
                        sys.stderr.write(f"\rDownloading {os.path.basename(dst)}: {100 * done // total}%")
                if progress and total:
                    sys.stderr.write("\n")
        except (OSError, ValueError) as e:      # URLError, timeouts, refused connections
            raise WeightsDownloadError(
                f"cannot download the weights file {os.path.basename(dst)} ({e}). Download it from {url} "
                f"and place it at {dst} (the directory is $TORCH_HOME/hub/checkpoints), or load a local "
                f"copy with model.load_state_dict(tensorplug.load(path))") from None
        tmp.close()
        if hash_prefix is not None:
            digest = sha.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(tmp.name, dst)
    finally:
        tmp.close()
        if os.path.exists(tmp.name):
            os.remove(tmp.name)


# -- the registry ----------------------------------------------------------------------------------
BUILTIN_MODELS: dict[str, Callable] = {}


def register_model(name: str | None = None):
    def wrapper(fn):
        key = name if name is not None else fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        return fn
    return wrapper


def list_models(module: ModuleType | None = None, include=None, exclude=None) -> list[str]:
    """Sorted names of the registered models (of `module` if given), filtered by fnmatch patterns."""
    all_models = {k for k, v in BUILTIN_MODELS.items()
                  if module is None or v.__module__.rsplit(".", 1)[0] == module.__name__}
    if include:
        models: set = set()
        for pat in [include] if isinstance(include, str) else include:
            models |= set(fnmatch.filter(all_models, pat))
    else:
        models = all_models
    if exclude:
        for pat in [exclude] if isinstance(exclude, str) else exclude:
            models -= set(fnmatch.filter(all_models, pat))
    return sorted(models)


def get_model_builder(name: str) -> Callable:
    name = name.lower()
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config: Any):
    """The model `name` built with `config` (e.g. weights="DEFAULT", num_classes=10)."""
    return get_model_builder(name)(**config)


def get_model_weights(name: Callable | str):
    """The WeightsEnum class of a model (by name or builder), read from its `weights` annotation."""
    fn = get_model_builder(name) if isinstance(name, str) else name
    fn = getattr(fn, "__wrapped__", fn)
    ann = signature(fn).parameters["weights"].annotation
    for cand in (ann, *typing.get_args(ann)):
        if isinstance(cand, type) and issubclass(cand, WeightsEnum):
            return cand
    raise ValueError(f"The weight class for the specific method couldn't be retrieved. Make sure the "
                     f"typing info is correct.")


def get_weight(name: str):
    """The enum member named "ResNet50_Weights.IMAGENET1K_V2" (or "...DEFAULT")."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    import tensorplug.vision.models as models
    enum_cls = None
    for obj in vars(models).values():
        if isinstance(obj, type) and issubclass(obj, WeightsEnum) and obj.__name__ == enum_name:
            enum_cls = obj
            break
    if enum_cls is None:
        raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
    return enum_cls[value_name]
