"""The Hugging Face Mamba-2 adapter (card ssm-consensus, "Real architecture" and claim 7): the configured HF model's
per-layer token update equals the idealised layer of theory.consensus; the gate toggle, layer cycling and per-layer
capture act on the real modules."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("transformers")

from theorylab.nn.hf import full_precision_norms, random_init  # noqa: E402
from theorylab.nn.hf_mamba2 import (  # noqa: E402
    GateOnly,
    gate_off,
    idealized_mamba2,
    layer_states,
    mamba2_blocks,
)
from theorylab.probes.mamba2_consensus import consensus_measures, idealization_error  # noqa: E402
from theorylab.probes.spectra import gram_spectrum, participation_ratio  # noqa: E402
from theorylab.theory.consensus import draw_layer_weights, simulate_ideal_ssm  # noqa: E402

N, M, ELL, LAYERS = 16, 16, 50, 4
CARD = dict(
    hidden_size=64, num_hidden_layers=4, state_size=16, head_dim=16, num_heads=8, expand=2, n_groups=1, vocab_size=512
)  # the card's random-init config (a)
SMALL = dict(CARD, hidden_size=16, num_hidden_layers=2, state_size=8, head_dim=4, num_heads=8, vocab_size=32)


def _weights(gate: bool, seed: int = 0, runs: int = 1, layers: int = LAYERS):
    g = torch.Generator().manual_seed(seed)
    ws = [draw_layer_weights(runs, N, M, gate=gate, generator=g) for _ in range(layers)]
    z0 = torch.randn(runs, ELL, N, generator=g, dtype=torch.float64)
    return ws, z0 / z0.norm(dim=-1, keepdim=True)


@pytest.fixture(scope="module")
def small_model():
    return random_init("mamba2", seed=1, **SMALL)


@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize("nonlinearity", ["silu", "linear"])
def test_idealized_hf_model_is_the_idealised_layer(nonlinearity, gate):
    ws, z0 = _weights(gate)
    # float32, the card's claim 7 tolerance
    err32 = idealization_error(ws, z0, nonlinearity=nonlinearity, dtype=torch.float32)
    assert err32.shape == (LAYERS,) and float(err32.max()) <= 1e-5, err32
    # float64 (block norm at float64; HF's chunked scan itself runs in float32, which bounds this)
    model = idealized_mamba2(ws, nonlinearity=nonlinearity, dtype=torch.float64)
    with full_precision_norms(model):
        err64 = idealization_error(ws, z0, nonlinearity=nonlinearity, model=model)
    assert float(err64.max()) <= 1e-6, err64
    # the same against simulate_ideal_ssm's final tokens on the same weights and z0
    ref = simulate_ideal_ssm(
        N, M, ELL, 1, LAYERS, nonlinearity=nonlinearity, gate=gate, generator=None, z0=z0, weights=ws
    )
    with full_precision_norms(model):
        got = layer_states(model, z0, LAYERS).states[-1]
    assert torch.allclose(got, ref.z, atol=1e-6, rtol=0)
    if gate:  # the gate matters, and gate_off on the HF model is the idealised model without W_z
        with full_precision_norms(model):
            off = idealization_error(ws, z0, nonlinearity=nonlinearity, model=model, gate=False)
        assert float(off.max()) <= 1e-6
        assert float((got - layer_states(model, z0, LAYERS, gate=False).states[-1]).abs().max()) > 1e-2


def test_idealized_cycles_one_layer_and_picks_the_run():
    ws, z0 = _weights(gate=False, runs=2, layers=1)
    model = idealized_mamba2(ws[0], run=1, dtype=torch.float32)
    assert model.config.num_hidden_layers == 1 and len(mamba2_blocks(model)) == 1
    err = idealization_error(ws[0], z0, run=1, depth=6, model=model)  # both sequences, run 1's weights
    assert err.shape == (6,) and float(err.max()) <= 1e-5
    ref = simulate_ideal_ssm(N, M, ELL, 2, 6, time_invariant=True, generator=None, z0=z0, weights=ws)
    assert torch.allclose(layer_states(model, z0, 6).states[-1, 1].double(), ref.z[1], atol=1e-5, rtol=0)
    assert float((layer_states(model, z0, 6).states[-1, 0].double() - ref.z[0]).abs().max()) > 1e-2  # run 0 differs


def test_idealized_model_layout():
    ws, _ = _weights(gate=True, layers=2)
    model = idealized_mamba2(ws, tau=0.5, dtype=torch.float64)
    mixer = mamba2_blocks(model)[1].mixer
    assert (mixer.num_heads, mixer.head_dim, mixer.n_groups, mixer.ssm_state_size) == (N, 1, 1, M)
    assert isinstance(mixer.norm, GateOnly) and mixer.norm.gated and mixer.activation is None
    W = mixer.in_proj.weight.detach()
    assert torch.equal(W[N : 2 * N], torch.eye(N, dtype=torch.float64) / math.sqrt(N))
    assert torch.equal(W[2 * N : 2 * N + M], ws[1].S_B[0] / math.sqrt(N))
    assert torch.allclose(-mixer.A_log.detach().exp(), -ws[1].alpha[0]) and float(mixer.D.detach().abs().max()) == 0
    assert torch.allclose(mixer.out_proj.weight.detach(), 0.5 * math.sqrt(N) * torch.eye(N, dtype=torch.float64))
    assert torch.equal(mixer.conv1d.weight[:, 0, -1], torch.ones(N + 2 * M, dtype=torch.float64))


def test_negative_controls_break_the_equivalence():
    ws, z0 = _weights(gate=False)
    model = idealized_mamba2(ws, dtype=torch.float32)
    # stock HF activation: SiLU on the whole xBC (so on x as well, and twice on B, C)
    for block in mamba2_blocks(model):
        block.mixer.activation = "silu"
    assert float(idealization_error(ws, z0, model=model).max()) > 1e-2
    # no projection: the residual stream grows, so only the first layer (started at radius √n) matches
    model = idealized_mamba2(ws, dtype=torch.float32)
    got = layer_states(model, math.sqrt(N) * z0, LAYERS, project=False).states[1:].double()
    good = layer_states(model, z0, LAYERS).states[1:].double()
    assert float((got[0] - good[0]).abs().max()) <= 1e-6
    assert float((got[-1] - good[-1]).abs().max()) > 1e-2


def test_random_init_mamba2_norms_and_shapes(small_model):
    blocks = mamba2_blocks(small_model)
    assert len(blocks) == 2 and type(small_model).__name__ == "Mamba2ForCausalLM"
    for block in blocks:  # every norm scale perturbed around 1 (stored as is), the gated one too
        for w in (block.norm.weight, block.mixer.norm.weight):
            assert 0 < float((w.detach() - 1).abs().max()) < 1
    with pytest.raises(ValueError, match="unknown architecture"):
        random_init("mamba3", **SMALL)


def test_gate_off_changes_the_output_and_restores(small_model):
    ids = torch.randint(0, SMALL["vocab_size"], (2, 12), generator=torch.Generator().manual_seed(0))
    norms = [b.mixer.norm for b in mamba2_blocks(small_model)]
    with torch.no_grad():
        before = small_model(ids).logits
        with gate_off(small_model) as switched:
            off = small_model(ids).logits
        after = small_model(ids).logits
    assert switched == 2 and torch.equal(before, after)
    assert float((off - before).abs().max()) > 1e-3
    assert [b.mixer.norm for b in mamba2_blocks(small_model)] == norms
    with pytest.raises(RuntimeError, match="inside"), gate_off(small_model):
        raise RuntimeError("inside")
    assert [b.mixer.norm for b in mamba2_blocks(small_model)] == norms


def test_layer_states_is_the_real_forward_and_cycles(small_model):
    ids = torch.randint(0, SMALL["vocab_size"], (3, 10), generator=torch.Generator().manual_seed(0))
    # without projection and gate on: the model's own block outputs in its own forward, normalised. Read by hooks,
    # not output_hidden_states, whose layout changed across transformers versions (5.25: the embedding first, the
    # final norm's output last; the version this test was written on had block k's output at index k).
    st = layer_states(small_model, ids, 2, project=False, chunk_size=256)  # the model's own chunk size
    outs = []
    hooks = [
        b.register_forward_hook(lambda mod, args, out: outs.append(out[0] if isinstance(out, tuple) else out))
        for b in mamba2_blocks(small_model)
    ]
    try:
        with torch.no_grad():
            small_model.backbone(ids, use_cache=False)
    finally:
        for hook in hooks:
            hook.remove()
    assert len(outs) == 2
    for k in range(2):
        ref = outs[k] / outs[k].norm(dim=-1, keepdim=True)
        assert torch.allclose(st.states[k + 1], ref, atol=1e-12, rtol=0)
    # cycling past the 2 blocks: layer k runs block k mod 2
    blocks = mamba2_blocks(small_model)
    st = layer_states(small_model, ids, 7, chunk_size=256)
    assert st.layers == list(range(8)) and st.states.shape == (8, 3, 10, SMALL["hidden_size"])
    h = small_model.get_input_embeddings()(ids)
    with torch.no_grad():
        for k in range(7):
            h = 4.0 * h / h.norm(dim=-1, keepdim=True)  # radius √16
            h = blocks[k % 2](h)
    assert torch.allclose(st.states[-1], h / h.norm(dim=-1, keepdim=True), atol=1e-12, rtol=0)
    # a recorded subset: 0, every 3rd and the last
    sub = layer_states(small_model, ids, 7, record_every=3, chunk_size=256)
    assert sub.layers == [0, 3, 6, 7] and torch.equal(sub.states, st.states[[0, 3, 6, 7]])
    # embeddings in place of ids; the default chunk size (min(256, length)) only changes the rounding of the
    # float32 scan, and the model's own is left as it was
    emb = small_model.get_input_embeddings()(ids).detach()
    assert torch.allclose(layer_states(small_model, emb, 7).states, st.states, atol=1e-5, rtol=0)
    assert all(b.mixer.chunk_size == SMALL.get("chunk_size", 256) for b in blocks)


def test_bad_arguments(small_model):
    ids = torch.zeros(1, 4, dtype=torch.long)
    for depth in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="depth"):
            layer_states(small_model, ids, depth)
    with pytest.raises(ValueError, match="record_every"):
        layer_states(small_model, ids, 2, record_every=0)
    with pytest.raises(ValueError, match="shape"):
        layer_states(small_model, torch.zeros(1, 4, 3), 2)
    with pytest.raises(ValueError, match="Mamba-2"):
        layer_states(torch.nn.Linear(2, 2), ids, 2)
    with pytest.raises(ValueError, match="Mamba-2"), gate_off(torch.nn.Linear(2, 2)):
        pass
    ws, _ = _weights(gate=False, layers=1)
    with pytest.raises(ValueError, match="nonlinearity"):
        idealized_mamba2(ws, nonlinearity="relu")
    with pytest.raises(ValueError, match="run"):
        idealized_mamba2(ws, run=1)
    with pytest.raises(ValueError, match="LayerWeights"):
        idealized_mamba2([])


def test_consensus_measures_reuse_the_gram_spectrum():
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(3, 2, 8, 5, generator=g, dtype=torch.float64)
    lam, r = consensus_measures(Z)
    assert lam.shape == r.shape == (3, 2)
    assert torch.equal(lam, gram_spectrum(Z)[..., 0]) and torch.equal(r, participation_ratio(Z, tokens=True))
    u = torch.randn(5, generator=g, dtype=torch.float64)
    collinear = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)[:, None] * u
    lam, r = consensus_measures(collinear)
    assert abs(float(lam) - 1) < 1e-12 and abs(float(r) - 1) < 1e-12
