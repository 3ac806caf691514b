"""Weight patches: exact on every family and on real Hugging Face module code; the controls fail."""

from __future__ import annotations

import copy

import pytest
import torch

from theorylab.nn.blocks import FAMILIES, make_stack
from theorylab.probes.weight_patches import (
    apply_patches,
    chain_patches,
    hf_chain_patches,
    implicit_patch,
    numerical_rank,
    patched,
    patched_greedy,
    with_context_states,
)
from theorylab.theory.patches import NotControllable


def _prompt(d, c, seed=0, dtype=torch.float64):
    return torch.randn(c + 1, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mode", ["output", "full"])
def test_chain_is_exact_and_rank_one(family, mode):
    stack = make_stack(family, 3, 16, seed=3)
    X = _prompt(16, 7)
    res = chain_patches(stack, X, mode)
    scale = max(res.scales)
    assert max(res.errors) <= 1e-12 * (1 + scale)
    for p in res.patches:
        for f in p.factors.values():
            assert numerical_rank(f) == 1
    # Independent check: copy the stack, add the deltas by hand, run the query alone.
    manual = copy.deepcopy(stack)
    with torch.no_grad():
        for i, p in enumerate(res.patches):
            params = dict(manual.blocks[i].named_parameters())
            for name, delta in p.deltas.items():
                params[name].add_(delta)
        out = manual(X[-1:])[-1]
        assert torch.allclose(out, stack(X)[-1], atol=1e-12 * (1 + scale), rtol=0)
        assert not torch.allclose(stack(X[-1:])[-1], stack(X)[-1], atol=1e-3)  # the context matters


def test_float32_within_the_claims_bound():
    stack = make_stack("gemma", 4, 32, seed=0, dtype=torch.float32)
    res = chain_patches(stack, _prompt(32, 10, dtype=torch.float32), "full")
    assert max(res.errors) <= 1e-4 * (1 + max(res.scales))


@pytest.mark.parametrize("family", ["llama", "gemma", "vanilla"])
def test_independent_patches_fail_from_layer_two(family):
    stack = make_stack(family, 3, 16, seed=4)
    res = chain_patches(stack, _prompt(16, 5, 1), independent=True)
    assert res.errors[0] <= 1e-12 * (1 + res.scales[0])
    assert min(res.errors[1:]) > 1e-3


def test_patch_for_one_query_misses_another():
    stack = make_stack("llama", 2, 16, seed=5)
    X = _prompt(16, 5, 2)
    res = chain_patches(stack, X)
    X2 = torch.cat([X[:-1], torch.randn(1, 16, dtype=torch.float64)])
    truth = with_context_states(stack, X2)[-1]["out"]
    assert float((apply_patches(stack, X2[-1:], res.patches)[-1] - truth).abs().max()) > 1e-3


def test_patched_restores_weights_bit_for_bit_even_after_an_error():
    stack = make_stack("gemma", 1, 8, seed=0)
    before = {k: v.clone() for k, v in stack.state_dict().items()}
    with pytest.raises(RuntimeError, match="boom"):
        with patched(stack, {"blocks.0.W_d": torch.ones(8, 32, dtype=torch.float64)}):
            assert not torch.equal(stack.blocks[0].W_d, before["blocks.0.W_d"])
            raise RuntimeError("boom")
    assert all(torch.equal(v, before[k]) for k, v in stack.state_dict().items())
    with pytest.raises(KeyError, match="no parameter"):
        with patched(stack, {"blocks.0.nope": torch.zeros(1)}):
            pass


def test_dead_post_norm_scale_is_refused():
    block = make_stack("gemma", 1, 8, seed=0).blocks[0]
    with torch.no_grad():
        block.g4[3] = -1.0
    X = _prompt(8, 4)
    for mode in ("output", "full"):
        with pytest.raises(NotControllable, match="not output-controllable"):
            implicit_patch(block, block.query_state(X), block.query_state(X[-1:]), mode)


def test_numerical_rank():
    a = torch.outer(torch.arange(1.0, 4.0, dtype=torch.float64), torch.ones(5, dtype=torch.float64))
    assert numerical_rank(a) == 1 and numerical_rank(torch.zeros(3, 3)) == 0
    assert numerical_rank(torch.eye(4, dtype=torch.float64)) == 4


# --------------------------------------------------------------------------------------------
# Hugging Face
# --------------------------------------------------------------------------------------------

transformers = pytest.importorskip("transformers")

from theorylab.nn.hf import full_precision_norms, random_init  # noqa: E402

SMALL = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=1, head_dim=8, vocab_size=97)
CONFIGS = {
    "gemma3": dict(SMALL, sliding_window=4, layer_types=["sliding_attention", "full_attention", "sliding_attention"]),
    "llama": SMALL,
    "mixtral": dict(SMALL, num_local_experts=4, num_experts_per_tok=2),
}


@pytest.fixture(scope="module")
def hf_models():
    return {arch: random_init(arch, seed=1, **cfg) for arch, cfg in CONFIGS.items()}


def _ids(n, seed=0):
    return torch.randint(0, 97, (1, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("arch", list(CONFIGS))
@pytest.mark.parametrize("mode", ["output", "full"])
def test_hf_patches_are_exact_and_restored(hf_models, arch, mode):
    model = hf_models[arch]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with full_precision_norms(model) as swapped:
        assert swapped > 0
        res = hf_chain_patches(model, _ids(9), mode)
    assert res.logit_error <= 1e-10 * (1 + float(res.logits_context.abs().max()))
    assert max(res.errors) <= 1e-10 * (1 + max(float(o.abs().max()) for o in res.with_context))
    assert all(numerical_rank(f) == 1 for p in res.patches for f in p.factors.values())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    # without the context and without a patch the logits differ: the check is not vacuous
    with torch.no_grad():
        bare = model(input_ids=_ids(9)[:, -1:]).logits[0, -1]
    assert float((bare - res.logits_context).abs().max()) > 1e-3
    if arch == "gemma3":
        assert any("post_feedforward_layernorm" in k for k in res.patches[0].scales)
    if arch == "mixtral":
        assert "expert" in res.patches[0].info


def test_hf_gemma_native_float32_norms_limit_float64_exactness(hf_models):
    # HF's Gemma RMSNorm rounds to float32: the scale patch then lands only to float32 precision.
    res = hf_chain_patches(hf_models["gemma3"], _ids(9))
    assert 1e-10 < res.logit_error < 1e-5


def test_full_precision_norms_restore_the_module_forward(hf_models):
    model = hf_models["gemma3"]
    ids = _ids(5)
    with torch.no_grad():
        a = model(input_ids=ids).logits
        with full_precision_norms(model):
            b = model(input_ids=ids).logits
        c = model(input_ids=ids).logits
    assert torch.equal(a, c) and not torch.equal(a, b) and torch.allclose(a, b, atol=1e-5)


def test_hf_greedy_generation_identical(hf_models):
    with full_precision_norms(hf_models["llama"]):
        trace = patched_greedy(hf_models["llama"], _ids(6, 3), 5)
    assert trace.identical and len(trace.tokens_patched) == 5
    assert max(trace.logit_errors) < 1e-10


def test_hf_dead_scale_is_refused(hf_models):
    model = hf_models["gemma3"]
    norm = model.model.layers[1].post_feedforward_layernorm
    saved = norm.weight.detach().clone()
    try:
        with torch.no_grad():
            norm.weight[0] = -1.0
        with pytest.raises(NotControllable, match="post_feedforward_layernorm"):
            hf_chain_patches(model, _ids(6))
    finally:
        with torch.no_grad():
            norm.weight.copy_(saved)
    assert torch.equal(norm.weight, saved)


def test_hf_input_checks(hf_models):
    with pytest.raises(ValueError, match="shape"):
        hf_chain_patches(hf_models["llama"], _ids(1))
    with pytest.raises(ValueError, match="unknown architecture"):
        random_init("rwkv")


def test_gemma3_1b_shape_builds_and_runs_one_step_on_cpu():
    # The paper preset's width (1152 / 6912, head_dim 256, 4 heads, 1 KV head) at 2 layers and a small vocabulary.
    model = random_init("gemma3", seed=0, dtype=torch.float32, hidden_size=1152, intermediate_size=6912, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=1, head_dim=256, vocab_size=1024, sliding_window=512, layer_types=["sliding_attention", "full_attention"])
    res = hf_chain_patches(model, _ids(12) % 1024)
    assert res.logit_error <= 1e-4 * (1 + float(res.logits_context.abs().max()))
