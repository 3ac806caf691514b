"""ToyTransformer's final-norm kind, freeze prefixes and pre/post-final-norm residuals (backward compatible)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from theorylab.nn.toy_transformer import ToyTransformer

BASE = dict(d_model=16, n_heads=2, mlp_width=8, causal=True, positional="learned", max_len=6, vocab_size=11)


def test_default_final_norm_is_unchanged():
    x = torch.randint(0, 11, (3, 6), generator=torch.Generator().manual_seed(0))
    for final in (False, True):
        a = ToyTransformer(**BASE, final_norm=final, seed=1)
        b = ToyTransformer(**BASE, final_norm=final, final_norm_kind="layer" if final else None, seed=1)
        assert torch.equal(a(x), b(x))  # None means the blocks' kind, drawing nothing extra
        assert [k for k in a.state_dict()] == [k for k in b.state_dict()]
        assert isinstance(a.norm_final, nn.LayerNorm if final else nn.Identity)


def test_final_layernorm_only_and_residuals_around_it():
    m = ToyTransformer(**BASE, norm="none", final_norm=True, final_norm_kind="layer", seed=2)
    assert isinstance(m.norm_final, nn.LayerNorm)
    assert all(isinstance(b.norm_attn, nn.Identity) for b in m.blocks)
    x = torch.randint(0, 11, (4, 6), generator=torch.Generator().manual_seed(1))
    out, cache = m.run_with_cache(x, ["blocks.0.hook_resid_post", "hook_final"])
    pre, post = cache["blocks.0.hook_resid_post"], cache["hook_final"]
    ln = m.norm_final
    assert torch.allclose(post, F.layer_norm(pre, (16,), ln.weight, ln.bias, ln.eps))
    assert torch.allclose(out, m.readout(post))
    rms = ToyTransformer(**BASE, norm="layer", final_norm=True, final_norm_kind="rms", seed=2)
    assert isinstance(rms.norm_final, nn.RMSNorm) and isinstance(rms.blocks[0].norm_attn, nn.LayerNorm)


def test_freeze_prefixes():
    m = ToyTransformer(**BASE, n_layers=2, freeze=("blocks.0", "pos"), seed=3)
    frozen = {n for n, p in m.named_parameters() if not p.requires_grad}
    assert frozen == {n for n, _ in m.named_parameters() if n.startswith("blocks.0.") or n == "pos"}
    assert all(p.requires_grad for n, p in ToyTransformer(**BASE, seed=3).named_parameters())
    with pytest.raises(ValueError, match="freeze"):
        ToyTransformer(**BASE, freeze=("blocks.7",))
    with pytest.raises(ValueError, match="final_norm_kind"):
        ToyTransformer(**BASE, final_norm_kind="layer")
