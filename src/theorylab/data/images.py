"""Local image data sets the user already has on disk (nothing is ever downloaded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from theorylab.data.digits import ImageSet, digits


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


def image_tensors(path: str | Path | None = None) -> tuple[torch.Tensor, np.ndarray | None]:
    """Images (n, C, H, W) in [-1, 1] as float32 and their labels: scikit-learn's 8x8 digits in the
    fixed order of :func:`theorylab.data.digits.digits` (labels permuted alike), or the local set at
    ``path`` (:class:`ImageFolderArray`; labels None; channels-last arrays are moved to channels-first)."""
    if path is None:
        from sklearn.datasets import load_digits

        data = digits()
        labels = load_digits().target[np.random.default_rng(0).permutation(len(data.x))]  # digits() uses this order
        return torch.from_numpy(data.x).float().view(-1, 1, 8, 8), labels
    data = ImageFolderArray(path).load()
    shape = data.image_shape
    x = torch.from_numpy(data.x).float().view(-1, *shape)
    if len(shape) == 2:
        x = x[:, None]
    elif shape[-1] in (1, 3, 4) and shape[0] not in (1, 3, 4):
        x = x.permute(0, 3, 1, 2)  # (n, H, W, C) -> (n, C, H, W)
    return x, None


def display_image(image: np.ndarray) -> tuple[np.ndarray, dict]:
    """An image (C, H, W) in [-1, 1] ready for ``imshow``: ``(array, keyword arguments)``; one channel in
    reversed grey on [-1, 1], else the first three channels as RGB in [0, 1]."""
    if image.shape[0] == 1:
        return image[0], dict(cmap="gray_r", vmin=-1, vmax=1)
    return np.clip((np.moveaxis(image[:3], 0, -1) + 1) / 2, 0, 1), {}
