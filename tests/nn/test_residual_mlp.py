"""The residual MLP stack: shapes, the window variant's locality, the Mixer's mixing, reproducible init."""

from __future__ import annotations

import pytest
import torch

from theorylab.nn.residual_mlp import ResidualMLPStack


def _tokens(n=3, L=12, V=7, seed=0):
    return torch.randint(0, V, (n, L), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("variant", ["mixer", "window"])
def test_shapes_and_every_block_output(variant):
    m = ResidualMLPStack(8, 7, 12, d=10, n_blocks=4, variant=variant, window=2, seed=0)
    x = _tokens()
    logits, layers = m(x, return_layers=True)
    assert logits.shape == (3, 12, 7) and len(layers) == 4 and all(h.shape == (3, 12, 10) for h in layers)
    assert torch.equal(m(x), logits)
    # the readout is the final LN + linear map of the last block output
    assert torch.allclose(logits, m.readout(m.ln_out(layers[-1])))
    # block l's output is block l applied to block l - 1's output
    assert torch.allclose(layers[1], m.blocks[1](layers[0]))
    assert torch.allclose(layers[0], m.blocks[0](m.embed(x)))


def test_seeded_init_is_reproducible_and_leaves_the_global_stream_alone():
    state = torch.random.get_rng_state()
    a = ResidualMLPStack(8, 7, 12, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    b = ResidualMLPStack(8, 7, 12, seed=3)
    c = ResidualMLPStack(8, 7, 12, seed=4)
    x = _tokens()
    assert torch.equal(a(x), b(x)) and not torch.equal(a(x), c(x))


def test_window_variant_is_local_and_equals_a_linear_map_of_the_one_hot_window():
    V, L, w = 5, 10, 2
    m = ResidualMLPStack(V, V, L, d=6, n_blocks=2, variant="window", window=w, seed=1)
    x = _tokens(2, L, V)
    # reference: concatenate the one-hot window (padding id V outside the sequence), one nn.Linear
    pad = torch.nn.functional.pad(x, (w, w), value=V)
    onehot = torch.nn.functional.one_hot(pad, V + 1).float()  # (n, L + 2w, V + 1)
    win = torch.cat([onehot[:, o : o + L] for o in range(2 * w + 1)], dim=-1)
    assert torch.allclose(m.embed(x), m.embed_win(win), atol=1e-6)
    # changing a token at distance > w leaves position t's output unchanged; within w it changes
    y = x.clone()
    y[:, 9] = (y[:, 9] + 1) % V
    out_x, out_y = m(x), m(y)
    assert torch.allclose(out_x[:, : 9 - w], out_y[:, : 9 - w], atol=1e-6)
    assert not torch.allclose(out_x[:, 9 - w], out_y[:, 9 - w])


def test_mixer_mixes_positions_and_channel_blocks_do_not():
    V, L = 5, 10
    m = ResidualMLPStack(V, V, L, d=6, n_blocks=1, variant="mixer", seed=2)
    x = _tokens(2, L, V)
    y = x.clone()
    y[:, 9] = (y[:, 9] + 1) % V
    assert not torch.allclose(m(x)[:, 0], m(y)[:, 0])  # token mixing reaches every position
    h = torch.randn(2, L, 6)
    block = m.blocks[0]
    h2 = h.clone()
    h2[:, 9] += 1.0
    ch = lambda z: z + block.mlp_ch(block.ln_ch(z))  # noqa: E731
    assert torch.allclose(ch(h)[:, :9], ch(h2)[:, :9])


def test_bad_input_fails_early():
    with pytest.raises(ValueError, match="variant"):
        ResidualMLPStack(5, 5, 8, variant="attention")
    with pytest.raises(ValueError, match=">= 1"):
        ResidualMLPStack(5, 5, 8, n_blocks=0)
    m = ResidualMLPStack(5, 5, 8)
    with pytest.raises(ValueError, match="shape"):
        m(torch.zeros(2, 9, dtype=torch.long))


def test_flat_variant_is_one_linear_map_of_the_flattened_one_hot_sequence():
    V, L = 5, 6
    m = ResidualMLPStack(V, V - 1, L, d=7, n_blocks=2, variant="flat", seed=3)
    x = _tokens(3, L, V)
    onehot = torch.nn.functional.one_hot(x, V).float().reshape(3, L * V)  # (n, L·V), position-major
    assert torch.allclose(m.embed(x), m.embed_flat(onehot)[:, None], atol=1e-6)
    logits, layers = m(x, return_layers=True)
    assert logits.shape == (3, L, V - 1) and all(h.shape == (3, 1, 7) for h in layers)
    assert torch.allclose(logits, m.readout(m.ln_out(layers[-1])).reshape(3, L, V - 1))
    # the first position's logits depend on the last token (global from layer 0)
    y = x.clone()
    y[:, -1] = (y[:, -1] + 1) % V
    assert not torch.allclose(m(x)[:, 0], m(y)[:, 0])
