"""Local image data sets the user already has on disk (nothing is ever downloaded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from theorylab.data.digits import ImageSet


class ImageFolderArray:
    """Load images from a ``.npz`` file (array ``x`` or the first array, shape (N, H, W[, C]) or (N, C, H, W))
    or a folder of PNG/JPEG files, flatten them and scale to [-1, 1].

    For paper-scale runs on CIFAR-10, FFHQ32, AFHQ32, ... that the user has locally.
    """

    def __init__(self, path: str | Path, limit: int | None = None, permutation_seed: int = 0):
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"image data not found: {self.path}")
        self.limit = limit
        self.permutation_seed = permutation_seed

    def load(self) -> ImageSet:
        if self.path.suffix == ".npz":
            with np.load(self.path) as data:
                key = "x" if "x" in data.files else data.files[0]
                arr = np.asarray(data[key])
        else:
            from matplotlib.image import imread

            files = sorted(p for p in self.path.iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
            if not files:
                raise FileNotFoundError(f"no .png/.jpg images in {self.path}")
            arr = np.stack([imread(p) for p in files[: self.limit]])
        arr = arr.astype(np.float64)
        scale = 255.0 if arr.max() > 1.0 else 1.0
        x = arr / scale * 2.0 - 1.0
        shape = x.shape[1:]
        x = x.reshape(len(x), -1)
        order = np.random.default_rng(self.permutation_seed).permutation(len(x))
        x = x[order][: self.limit]
        return ImageSet(x=x, image_shape=tuple(shape))
