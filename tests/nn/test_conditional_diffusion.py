"""ConditionalDiffusion: shapes, per-frame heads, anchors, both backbones, errors."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.conditional_diffusion import ConditionalDiffusion, LevelClassifierHead, mlp_backbone, unet_backbone


def test_mlp_layout_shapes_and_card_size():
    m = ConditionalDiffusion(mlp_backbone(64, 2, 1, 256, 3), 2, 1000)
    assert 0.9e6 < sum(p.numel() for p in m.parameters()) < 1.1e6  # card: ≈ 1.0 M
    eps, logits = m(torch.randn(5, 2, 1, 64))
    assert eps.shape == (5, 2, 1, 64) and logits.shape == (5, 2, 1000)
    eps2, none = m(torch.randn(5, 2, 1, 64), levels=False)
    assert none is None and eps2.shape == eps.shape
    assert len(m.heads) == 2 and all(isinstance(h, LevelClassifierHead) for h in m.heads)


def test_mlp_backbone_functional_forward_equals_its_modules():
    torch.manual_seed(0)
    bb = mlp_backbone(8, 2, 1, 16, 2)
    x = torch.randn(6, 16)
    h = bb.inp(x)
    for block in bb.blocks:
        h = h + block(h)
    h = bb.norm(h)
    eps, feat = bb(x)
    torch.testing.assert_close(feat, h, rtol=0, atol=0)
    torch.testing.assert_close(eps, bb.eps(h), rtol=0, atol=0)
    eps.sum().backward()  # trains through the same parameters
    assert all(p.grad is not None for p in bb.parameters())


def test_heads_are_independent_per_frame():
    torch.manual_seed(0)
    m = ConditionalDiffusion(mlp_backbone(8, 3, 1, 16, 1), 3, 10)
    x = torch.randn(4, 3, 1, 8)
    _, logits = m(x)
    h = m.backbone(x.flatten(1))[1]
    for i in range(3):
        torch.testing.assert_close(logits[:, i], m.heads[i](h))
    assert not torch.allclose(logits[:, 0], logits[:, 1])


def test_unet_layout_with_anchor_is_shift_equivariant():
    torch.manual_seed(0)
    m = ConditionalDiffusion(unet_backbone(2, 2, 1, 1, 8, 2), 2, 50, anchors=1, layout="channels").eval()
    x, a = torch.randn(2, 2, 1, 16, 16), torch.randn(2, 1, 1, 16, 16)
    eps, logits = m(x, a)
    assert eps.shape == x.shape and logits.shape == (2, 2, 50)
    # circular convolutions: a shift by 2^levels commutes with ε̂ and leaves the pooled logits unchanged
    eps_s, logits_s = m(torch.roll(x, 4, -1), torch.roll(a, 4, -1))
    torch.testing.assert_close(eps_s, torch.roll(eps, 4, -1), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(logits_s, logits, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="anchor"):
        m(x)


def test_errors():
    with pytest.raises(ValueError, match="no anchor"):
        ConditionalDiffusion(mlp_backbone(8), 2, 10, anchors=1)
    with pytest.raises(ValueError, match="layout"):
        ConditionalDiffusion(mlp_backbone(8), 2, 10, layout="grid")
    m = ConditionalDiffusion(mlp_backbone(8), 2, 10)
    with pytest.raises(ValueError, match="expected 2 frames"):
        m(torch.randn(3, 3, 1, 8))
