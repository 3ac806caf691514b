"""nn.field_vit: the full-attention field ViT (shape contract, one grid only) and the zero-padding wrapper."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.axial import XFieldCNN
from theorylab.nn.field_vit import FieldViT, ZeroPadToDims
from theorylab.probes.equivariance import max_equivariance_error


@pytest.mark.parametrize("grid", [(16,), (8, 8), (8, 8, 8)])
def test_field_vit_shapes_and_binding(grid):
    net = FieldViT(grid, in_channels=2, out_channels=1, d_model=8, depth=1, heads=2, patch=4)
    assert net(torch.randn(3, 2, *grid)).shape == (3, 1, *grid)
    with pytest.raises(ValueError, match="built for"):
        net(torch.randn(3, 2, *[n * 2 for n in grid]))  # bound to one grid, unlike the axial models
    with pytest.raises(ValueError, match="divisible"):
        FieldViT((10, 8), patch=4)


def test_full_attention_mixes_all_tokens():
    """Changing one far patch changes every output patch (full attention), not only its axis lines."""
    torch.manual_seed(0)
    net = FieldViT((16, 16), d_model=8, depth=1, heads=2, patch=4).eval()
    x = torch.randn(1, 1, 16, 16)
    x2 = x.clone()
    x2[..., 12:, 12:] += 1.0
    with torch.no_grad():
        d = (net(x2) - net(x)).abs()
    assert d[..., :4, :4].max() > 1e-6  # the patch at (0, 0) shares no row or column with (3, 3)


def test_zero_pad_wrapper_equals_padding_by_hand():
    torch.manual_seed(0)
    vit = FieldViT((8, 8), d_model=8, depth=1, heads=2, patch=4).eval()
    wrap = ZeroPadToDims(vit, 2, 8)
    x = torch.randn(2, 1, 8)
    padded = torch.zeros(2, 1, 8, 8)
    padded[..., 0] = x
    with torch.no_grad():
        assert torch.equal(wrap(x), vit(padded)[..., 0])
        assert torch.equal(wrap(padded), vit(padded))
    with pytest.raises(ValueError, match="cannot hold"):
        wrap(torch.randn(2, 1, 16))


def test_xfieldcnn_is_equivariant_and_residual():
    net = XFieldCNN(2, 1, width=4, layers=2)
    assert (
        max_equivariance_error(net, (2, 2, 6, 5, 4), dtype=torch.float32, generator=torch.Generator().manual_seed(0))
        <= 1e-5
    )
    for p in net.out.parameters():
        torch.nn.init.zeros_(p)
    x = torch.randn(2, 2, 8, 8)
    assert torch.equal(net(x), x[:, -1:])  # a zero increment returns the last input frame
    with pytest.raises(ValueError, match="residual"):
        XFieldCNN(1, 2)
