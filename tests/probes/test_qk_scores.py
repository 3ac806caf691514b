"""The operator-vs-module logit check catches layout mistakes."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.qk_scores import operator_logit_errors


def test_toy_operator_reproduces_logits_with_biases_and_the_transpose_does_not():
    model = ToyTransformer(
        d_model=16, n_heads=2, n_layers=2, vocab_size=20, causal=True, positional="learned", max_len=8, seed=0
    ).double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".b_" in name:
                p.normal_(0, 0.5)
    tokens = torch.randint(0, 20, (2, 8), generator=torch.Generator().manual_seed(0))
    good = operator_logit_errors(model, tokens)
    assert len(good) == 4 and good["rel_error"].max() < 1e-12
    bad = operator_logit_errors(model, tokens, transform=lambda M: M.T)
    assert bad["rel_error"].min() > 1e-3
    no_term = operator_logit_errors(model, tokens, transform=lambda M: M)  # same M: still exact
    assert no_term["rel_error"].max() < 1e-12


def test_rotary_models_are_refused():
    model = ToyTransformer(d_model=8, n_heads=2, vocab_size=5, positional="rotary", seed=0)
    with pytest.raises(ValueError, match="rotary"):
        operator_logit_errors(model, torch.zeros(1, 3, dtype=torch.long))
