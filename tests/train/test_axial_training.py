"""train.axial: the GP-toy classifier loop, its accuracy reader and the 3D-CNN baseline."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.axial import XCNN
from theorylab.train.axial import CNN3DBaseline, accuracy, to_3d, train_classifier


@pytest.mark.parametrize(
    "shape, out",
    [
        ((2, 1, 5), (2, 1, 5, 1, 1)),
        ((2, 1, 4, 3), (2, 1, 4, 3, 1)),
        ((2, 1, 4, 3, 2), (2, 1, 4, 3, 2)),
        ((2, 1, 4, 4, 4, 4), (2, 1, 4, 4, 16)),
        ((2, 1, 2, 2, 2, 2, 2), (2, 1, 2, 2, 8)),
    ],
)
def test_to_3d_shapes(shape, out):
    x = torch.randn(shape)
    assert tuple(to_3d(x).shape) == out and torch.equal(to_3d(x).flatten(), x.flatten())


def test_cnn3d_runs_on_every_dimension():
    torch.manual_seed(0)
    net = CNN3DBaseline(1, width=4, layers=2)
    for d in (1, 2, 3, 4, 5):
        assert tuple(net(torch.randn(3, 1, *[4] * d)).shape) == (3, 2)
    with pytest.raises(ValueError, match="odd kernel_size"):
        CNN3DBaseline(kernel_size=2)


def _toy(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Label 1: a field with a large amplitude; label 0: a small one (separable by the pooled std)."""
    y = torch.randint(0, 2, (n,), generator=gen)
    x = torch.randn(n, 1, 6, 6, generator=gen) * (0.2 + 1.8 * y.float()).view(-1, 1, 1, 1)
    return x, y


def test_train_classifier_learns_and_is_reproducible():
    torch.set_num_threads(1)
    x, y = _toy(128, torch.Generator().manual_seed(0))
    accs, losses = [], []
    for _ in range(2):
        torch.manual_seed(0)
        net = XCNN(1, width=4, layers=1)
        losses.append(
            train_classifier(net, x, y, epochs=15, batch=16, lr=1e-2, generator=torch.Generator().manual_seed(1))
        )
        accs.append(accuracy(net, x, y, batch=50))
    assert losses[0] == losses[1] and losses[0][-1] < losses[0][0]
    assert accs[0] >= 0.9 and not net.training


def test_train_classifier_rejects_bad_arguments():
    x, y = torch.randn(4, 1, 3, 3), torch.zeros(4, dtype=torch.long)
    net = XCNN(1, width=2, layers=1)
    with pytest.raises(ValueError, match="epochs"):
        train_classifier(net, x, y, epochs=0, batch=2, lr=1e-3, generator=torch.Generator())
    with pytest.raises(ValueError, match="same number"):
        train_classifier(net, x, y[:3], epochs=1, batch=2, lr=1e-3, generator=torch.Generator())
    with pytest.raises(ValueError, match="at least one"):
        accuracy(net, x[:0], y[:0])


def test_nonfinite_loss_raises():
    x, y = torch.full((4, 1, 3, 3), float("nan")), torch.zeros(4, dtype=torch.long)
    with pytest.raises(FloatingPointError):
        train_classifier(XCNN(1, width=2, layers=1), x, y, epochs=1, batch=2, lr=1e-3, generator=torch.Generator())
