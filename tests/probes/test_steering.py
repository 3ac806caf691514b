"""probes.steering: the CAA vector against a direct read of the cached residual stream."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn import ToyTransformer
from theorylab.probes.steering import caa_vector, residual_at, residual_hook


@pytest.fixture(scope="module")
def model():
    return ToyTransformer(
        vocab_size=9,
        d_model=8,
        n_layers=2,
        n_heads=2,
        mlp_width=8,
        causal=True,
        positional="learned",
        max_len=5,
        seed=0,
    ).double()


def test_caa_vector_matches_the_cache(model):
    g = torch.Generator().manual_seed(0)
    pos, neg = torch.randint(0, 9, (6, 5), generator=g), torch.randint(0, 9, (4, 5), generator=g)
    for layer, name in ((0, "hook_embed"), (1, "blocks.0.hook_resid_post"), (2, "blocks.1.hook_resid_post")):
        assert residual_hook(model, layer) == name
        _, cp = model.run_with_cache(pos, [name])
        _, cn = model.run_with_cache(neg, [name])
        want = cp[name][:, 3].mean(0) - cn[name][:, 3].mean(0)
        assert torch.allclose(caa_vector(model, pos, neg, layer, 3), want, atol=1e-14)
        assert torch.allclose(residual_at(model, pos, layer, -1), cp[name][:, -1])
    # the same prompts on both sides give 0; swapping the sides flips the sign
    assert torch.allclose(caa_vector(model, pos, pos, 1, 2), torch.zeros(8, dtype=torch.float64))
    assert torch.allclose(caa_vector(model, neg, pos, 1, 2), -caa_vector(model, pos, neg, 1, 2))


def test_bad_input(model):
    x = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="layer must lie in"):
        caa_vector(model, x, x, 3, 0)
    with pytest.raises(ValueError, match="position"):
        caa_vector(model, x, x, 1, 7)
    with pytest.raises(ValueError, match="at least one"):
        caa_vector(model, x[:0], x, 1, 0)
