"""Token losses against PyTorch's cross-entropy, and under vmap."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from theorylab.nn.token_losses import IGNORE, next_token_loss, trigger_loss


def test_trigger_loss_is_cross_entropy_at_triggers():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, 5, generator=g)
    targets = torch.full((3, 6), IGNORE)
    targets[0, 2], targets[2, 4], targets[2, 5] = 1, 3, 0
    expect = F.cross_entropy(logits.reshape(-1, 5), targets.reshape(-1), ignore_index=IGNORE)
    assert torch.allclose(trigger_loss(logits, targets), expect)
    assert float(trigger_loss(logits, torch.full((3, 6), IGNORE))) == 0.0  # no target: no loss, no NaN


def test_next_token_loss_is_shifted_cross_entropy_and_vmaps():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 4, 7, 9, generator=g)
    tokens = torch.randint(9, (2, 4, 7), generator=g)
    expect = [F.cross_entropy(logits[s, :, :-1].reshape(-1, 9), tokens[s, :, 1:].reshape(-1)) for s in range(2)]
    got = torch.vmap(next_token_loss)(logits, tokens)
    assert torch.allclose(got, torch.stack(expect))
