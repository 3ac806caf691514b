"""FastSlowLM and its pieces: pooling against a loop, the gate, causality, the variants' relations."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.fast_slow import BlockMeanPool, FastSlowLM, ZeroGate, attention_score_flops
from theorylab.probes.causality import leak_test

SMALL = dict(vocab_size=11, d_model=16, n_layers=2, n_heads=2, mlp_width=32, max_len=32)


@pytest.mark.parametrize("T", [8, 10])
def test_block_mean_pool_matches_a_loop(T):
    x = torch.randn(2, T, 3, dtype=torch.float64)
    pool = BlockMeanPool(4, causal=True)
    z = pool.pool(x)
    for b in range(z.shape[1]):
        assert torch.allclose(z[:, b], x[:, 4 * b : 4 * b + 4].mean(1))
    out = pool.broadcast(z, T)
    for t in range(T):
        expected = torch.zeros(2, 3, dtype=torch.float64) if t < 4 else z[:, t // 4 - 1]
        assert torch.equal(out[:, t], expected)
    leaky = BlockMeanPool(4, causal=False).broadcast(z, T)
    assert torch.equal(leaky[:, 5], z[:, 1])
    with pytest.raises(ValueError):
        BlockMeanPool(0)


def test_zero_gate_starts_closed():
    gate = ZeroGate(5)
    fast, side = torch.randn(2, 5), torch.randn(2, 5)
    assert torch.equal(gate(fast, side), fast) and gate.rms == 0.0
    with torch.no_grad():
        gate.g.fill_(0.5)
    assert torch.allclose(gate(fast, side), fast + 0.5 * side) and gate.rms == pytest.approx(0.5)


def test_variants_share_the_fast_path():
    x = torch.randint(0, 11, (3, 16))
    dense, frozen, coupled = (FastSlowLM(**SMALL, variant=v, seed=3) for v in ("dense", "frozen", "coupled"))
    assert torch.equal(dense(x), frozen(x)) and torch.equal(dense(x), coupled(x))  # gate 0: identical outputs
    trainable = {n for n, p in frozen.named_parameters() if p.requires_grad}
    assert not any("slow" in n or "gate" in n for n in trainable)
    assert any("gate" in n for n, p in coupled.named_parameters() if p.requires_grad)
    with torch.no_grad():
        for layer in coupled.layers:
            layer.gate.g.fill_(1.0)
    assert not torch.allclose(dense(x), coupled(x))


@pytest.mark.parametrize("T", [12, 14])
def test_open_gate_model_is_causal_and_unshifted_leaks(T):
    model = FastSlowLM(**SMALL, seed=0)
    leaky = FastSlowLM(**SMALL, seed=0, causal_pool=False)
    with torch.no_grad():
        for m in (model, leaky):
            for layer in m.layers:
                layer.gate.g.normal_()
    assert leak_test(model, T, 11, torch.Generator().manual_seed(0)).max_leak <= 1e-6
    report = leak_test(leaky, T, 11, torch.Generator().manual_seed(0))
    assert report.max_leak > 1e-3
    assert not set(report.leaking_positions(1e-6)) & {t for t in range(T) if t % 4 == 0}  # block starts read nothing


def test_score_flops_closed_form():
    assert attention_score_flops(128, 64) == 2 * 128 * 128 * 64
    assert attention_score_flops(128 // 4, 64) * 16 == attention_score_flops(128, 64)


def test_too_long_input_fails():
    with pytest.raises(ValueError, match="max_len"):
        FastSlowLM(**SMALL)(torch.zeros(1, 33, dtype=torch.long))
