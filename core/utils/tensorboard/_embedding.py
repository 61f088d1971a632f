"""The projector plugin's files for add_embedding: tensors.tsv, metadata.tsv, sprite.png under
`<logdir>/<step:05d>/<tag>/`, and projector_config.pbtxt (every embedding of the writer) in the logdir."""
from __future__ import annotations

import math
import os

import numpy as np
from google.protobuf import text_format
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig

from ._convert import make_np
from ._image import encode_png, make_grid

__all__ = ["write_embedding"]


def _quote(tag: str) -> str:
    """The tag as one folder name: % / and \\ percent-encoded."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _write(path, text: str):
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))


def _metadata_tsv(metadata, header) -> str:
    if not header:
        return "".join(f"{m}\n" for m in metadata)
    if len(header) != len(metadata[0]):
        raise AssertionError("len of header must be equal to the number of columns in metadata")
    return "".join("\t".join(str(e) for e in row) + "\n" for row in [header] + list(metadata))


def _sprite_png(label_img: np.ndarray) -> bytes:
    """The label images in a square grid, ceil(sqrt(N)) per side, float pixels in [0, 1]."""
    side = math.ceil(label_img.shape[0] ** 0.5)
    grid = make_grid(label_img, ncols=side).transpose(1, 2, 0)
    square = np.zeros((grid.shape[1], grid.shape[1], 3))
    square[:grid.shape[0]] = grid
    return encode_png(np.uint8((square * 255).clip(0, 255)))


def write_embedding(logdir, config: ProjectorConfig, mat, metadata=None, label_img=None, global_step=None,
                    tag="default", metadata_header=None) -> None:
    """Write one embedding's files and add it to `config`, rewritten whole (files are not appended to)."""
    mat = make_np(mat)
    step = 0 if global_step is None else global_step
    subdir = f"{str(step).zfill(5)}/{_quote(tag)}"
    path = os.path.join(logdir, subdir)
    if os.path.isdir(path):
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    elif os.path.exists(path):
        raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")
    if mat.ndim != 2:
        raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
    if metadata is not None and len(metadata) != mat.shape[0]:
        raise AssertionError("#labels should equal with #data points")
    if label_img is not None:
        label_img = make_np(label_img)
        if label_img.shape[0] != mat.shape[0]:
            raise AssertionError("#images should equal with #data points")
    os.makedirs(path, exist_ok=True)

    info = EmbeddingInfo(tensor_name=f"{tag}:{str(step).zfill(5)}", tensor_path=f"{subdir}/tensors.tsv")
    _write(os.path.join(path, "tensors.tsv"), "".join("\t".join(str(x.item()) for x in row) + "\n" for row in mat))
    if metadata is not None:
        _write(os.path.join(path, "metadata.tsv"), _metadata_tsv(metadata, metadata_header))
        info.metadata_path = f"{subdir}/metadata.tsv"
    if label_img is not None:
        with open(os.path.join(path, "sprite.png"), "wb") as f:
            f.write(_sprite_png(label_img))
        info.sprite.image_path = f"{subdir}/sprite.png"
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    config.embeddings.append(info)
    _write(os.path.join(logdir, "projector_config.pbtxt"), text_format.MessageToString(config))
