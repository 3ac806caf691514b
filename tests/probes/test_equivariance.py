"""The equivariance probe against maps whose symmetries are known exactly."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from theorylab.nn.axial import XCNN, GXLift, SXConv
from theorylab.probes.equivariance import equivariance_errors, max_equivariance_error


class _Ramp(nn.Module):
    """Multiplies by the ramp 1, 2, ... along the first spatial axis: it commutes exactly with the transforms that
    leave axis 0 alone (the identity, swaps of the other axes, flips of the other axes) and with no other."""

    def forward(self, x):
        ramp = torch.arange(1, x.shape[2] + 1, dtype=x.dtype).view(-1, *[1] * (x.ndim - 3))
        return x * ramp


class _CircularConv2d(nn.Module):
    def __init__(self, kernel: torch.Tensor):
        super().__init__()
        self.kernel = nn.Parameter(kernel.view(1, 1, *kernel.shape))

    def forward(self, x):
        return F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), self.kernel)


def test_pointwise_maps_commute_with_every_transform():
    df = equivariance_errors(nn.Tanh(), [(2, 3, 4, 5), (1, 2, 3, 4, 2)], shifts=[1], reflections=True)
    assert set(df["kind"]) == {"permutation", "shift", "reflection"}
    assert len(df) == (2 + 1 + 2) + (6 + 1 + 3)
    assert df["error"].max() == 0


def test_a_broken_map_is_caught_and_the_identity_is_not():
    df = equivariance_errors(_Ramp(), (2, 1, 4, 4, 4), shifts=[1], reflections=True)
    by = df.set_index("transform")["error"]
    assert by["perm(0, 1, 2)"] == 0  # the identity
    assert by["perm(0, 2, 1)"] == 0  # fixes axis 0, and the ramp only depends on axis 0
    assert by["perm(1, 0, 2)"] > 0.5 and by["shift(1, 1, 1)"] > 0.5 and by["flip(0)"] > 0.5
    assert by["flip(1)"] == 0 and by["flip(2)"] == 0
    assert max_equivariance_error(_Ramp(), (2, 1, 4, 4, 4)) == df[df.kind == "permutation"]["error"].max()


def test_circular_conv2d_symmetries_follow_its_kernel():
    """A circular Conv2d is always shift-equivariant; it commutes with the transpose only for a kernel K = Kᵀ and with
    flips only for a flip-symmetric kernel: the probe reads this off exactly."""
    g = torch.Generator().manual_seed(0)
    generic = _CircularConv2d(torch.randn(3, 3, generator=g))
    sym = torch.tensor([[0.5, 1.0, 0.5], [1.0, -6.0, 1.0], [0.5, 1.0, 0.5]])  # 9-point Laplacian: all symmetries
    transpose_only = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])  # K = Kᵀ, not flip-symmetric
    shapes = [(2, 1, 6, 7)]
    kw = dict(shifts=[1, (2, 5)], reflections=True)
    gen = equivariance_errors(generic, shapes, **kw).groupby("kind")["error"].max()
    assert gen["shift"] < 1e-12 and gen["permutation"] > 1e-2 and gen["reflection"] > 1e-2
    assert max_equivariance_error(_CircularConv2d(sym), shapes, **kw) < 1e-12
    tr = equivariance_errors(_CircularConv2d(transpose_only), shapes, **kw).groupby("kind")["error"].max()
    assert tr["permutation"] < 1e-12 and tr["shift"] < 1e-12 and tr["reflection"] > 1e-2


def test_invariant_outputs_and_output_modes():
    mean = lambda x: x.mean(dim=(2, 3))  # noqa: E731  (B, C): invariant to everything
    assert max_equivariance_error(mean, (2, 3, 4, 5), shifts=[1], reflections=True) < 1e-15
    first_row = lambda x: x[:, :, 0, :].sum(-1)  # noqa: E731  not invariant under the transpose
    assert max_equivariance_error(first_row, (2, 3, 4, 4)) > 0.1
    with pytest.raises(ValueError, match="cannot tell"):
        max_equivariance_error(lambda x: x.sum(2), (2, 3, 4, 5))


def test_node_outputs_permute_the_node_axis_too():
    torch.manual_seed(0)
    lift = GXLift(1, 2).double()  # a plain callable runs as given, so its module must be float64 already
    assert max_equivariance_error(lift, (2, 1, 3, 4, 5), output="nodes") < 1e-12
    relabelled = lambda x: lift(x).roll(1, dims=1)  # noqa: E731  node i gets node i-1's features: not equivariant
    assert max_equivariance_error(relabelled, (2, 1, 3, 4, 5), output="nodes") > 1e-3


def test_dtype_copy_and_inputs():
    torch.manual_seed(0)
    net = XCNN()
    net.train()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    err64 = max_equivariance_error(net.features, (2, 1, 6, 5, 4))
    err32 = max_equivariance_error(net.features, (2, 1, 6, 5, 4), dtype=torch.float32)
    assert err64 < 1e-13 and err32 < 1e-5
    assert net.training and next(net.parameters()).dtype == torch.float32  # the caller's model is untouched
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
    # shapes drawn from a generator = the same fields passed in
    x = torch.randn(2, 2, 5, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    conv = SXConv(2, 2)
    a = equivariance_errors(conv, x)
    b = equivariance_errors(conv, [(2, 2, 5, 6)], generator=torch.Generator().manual_seed(3))
    assert a["error"].tolist() == b["error"].tolist()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(perms=[(0, 1, 2)]), "not a permutation"),
        (dict(perms="some"), "perms must be"),
        (dict(shifts=[(1, 2, 3)]), "one entry per spatial axis"),
        (dict(output="tensor"), "output must be"),
    ],
)
def test_bad_arguments_fail_with_one_line(kwargs, match):
    with pytest.raises(ValueError, match=match) as err:
        max_equivariance_error(nn.Identity(), (1, 1, 3, 3), **kwargs)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="d >= 1"):
        max_equivariance_error(nn.Identity(), (2, 3))
