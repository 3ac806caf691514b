"""train.online_lm: the loss against a hand-written cross-entropy, and a loop that learns a fixed map."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.train.online_lm import next_token_loss, train_online_lm


def _model(seed=0, **kw):
    return ToyTransformer(
        d_model=16,
        n_heads=1,
        mlp_width=0,
        norm="none",
        final_norm=True,
        final_norm_kind="layer",
        causal=True,
        positional="learned",
        max_len=4,
        vocab_size=8,
        seed=seed,
        **kw,
    )


def test_next_token_loss_matches_manual_cross_entropy():
    m = _model()
    tokens = torch.randint(0, 8, (5, 4), generator=torch.Generator().manual_seed(0))
    logits = m(tokens[:, :3])
    manual = torch.stack([F.cross_entropy(logits[:, t - 1], tokens[:, t]) for t in (1, 3)]).mean()
    assert torch.allclose(next_token_loss(m, tokens, (1, 3)), manual)
    with pytest.raises(ValueError, match="targets"):
        next_token_loss(m, tokens, (0,))


def test_loop_learns_a_fixed_successor_and_measures_at_the_given_steps():
    m = _model(freeze=("pos",))
    pos0 = m.pos.detach().clone()

    def sample(b, gen):
        x = torch.randint(0, 4, (b, 1), generator=gen)
        return torch.cat([x, x + 4, x, x + 4], 1)  # token t+1 is a fixed function of token t

    seen = []
    measured, losses = train_online_lm(
        m,
        sample,
        steps=200,
        batch=64,
        lr=1e-2,
        generator=torch.Generator(),
        targets=(1,),
        evaluate_at=(0, 50, 200),
        measure=lambda model, step: seen.append(model.training) or step,
    )
    assert sorted(measured) == [0, 50, 200] and seen == [False] * 3 and m.training
    assert losses[-1] < 0.05 < losses[0] and len(losses) == 200
    assert torch.equal(m.pos, pos0)  # frozen by prefix
    with pytest.raises(ValueError, match="evaluate_at"):
        train_online_lm(m, sample, steps=5, batch=4, lr=1e-3, generator=torch.Generator(), evaluate_at=(6,))


def test_weight_decay_acts_only_on_the_named_prefixes():
    # Hooks zero every gradient, so only the decay moves weights: decoupled decay (AdamW) shrinks a decayed weight
    # by exactly (1 - lr * wd) per step, and the other parameters must not move at all.
    m = _model()
    before = {n: p.detach().clone() for n, p in m.named_parameters()}

    def sample(b, gen):
        return torch.zeros(b, 4, dtype=torch.long)

    lr, wd, steps = 1e-2, 0.5, 3
    for p in m.parameters():
        p.register_hook(lambda g: torch.zeros_like(g))
    train_online_lm(
        m, sample, steps=steps, batch=2, lr=lr, generator=torch.Generator(), weight_decay=wd, decay=("embed", "pos")
    )
    for n, p in m.named_parameters():
        expect = before[n] * (1 - lr * wd) ** steps if n.startswith(("embed", "pos")) else before[n]
        torch.testing.assert_close(p.detach(), expect, rtol=1e-6, atol=1e-7, msg=n)
    with pytest.raises(ValueError, match="match no trainable"):
        train_online_lm(
            m, sample, steps=1, batch=2, lr=lr, generator=torch.Generator(), weight_decay=wd, decay=("nonexistent",)
        )
