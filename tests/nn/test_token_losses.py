"""Token losses against PyTorch's cross-entropy, and under vmap."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from theorylab.nn import token_losses
from theorylab.nn.token_losses import IGNORE, PADDED_CLASSES, next_token_loss, pad_classes, trigger_loss


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


@pytest.mark.parametrize("classes", [3, 4, 10, 15, 16, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_padded_classes_give_the_same_losses_and_gradients(classes, dtype):
    g = torch.Generator().manual_seed(classes)
    logits = (3 * torch.randn(2, 50, 7, classes, generator=g, dtype=dtype)).requires_grad_(True)
    targets = torch.randint(0, classes, (2, 50, 7), generator=g)
    padded = pad_classes(logits)
    # padded only where it is measured to pay: float32, 4 <= V < 16, a CPU with AVX-512
    wide = dtype == torch.float32 and 4 <= classes < PADDED_CLASSES and token_losses._avx512()
    assert padded.shape[-1] == (PADDED_CLASSES if wide else classes)
    losses = [
        F.cross_entropy(x.reshape(-1, x.shape[-1]), targets.reshape(-1), reduction="none") for x in (logits, padded)
    ]
    torch.testing.assert_close(losses[1], losses[0])
    (grad,) = torch.autograd.grad(losses[0].sum(), logits)
    (grad_padded,) = torch.autograd.grad(losses[1].sum(), logits)
    torch.testing.assert_close(grad_padded, grad)
    assert torch.equal(padded.softmax(-1)[..., classes:], torch.zeros_like(padded[..., classes:]))  # never chosen


def test_padding_follows_the_cpu(monkeypatch):
    x = torch.randn(5, 10)
    monkeypatch.setattr(token_losses, "_avx512", lambda: False)  # an AVX2 CPU: not measured, the plain path
    assert pad_classes(x) is x
    monkeypatch.setattr(token_losses, "_avx512", lambda: True)
    assert pad_classes(x).shape == (5, PADDED_CLASSES) and torch.equal(pad_classes(x)[:, :10], x)
