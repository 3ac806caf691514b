"""Weight patches: exact on every family and on real Hugging Face module code; the controls fail."""

from __future__ import annotations

import copy

import pytest
import torch

from theorylab.nn.blocks import FAMILIES, make_stack
from theorylab.nn.regression_stack import in_context_regression_stack
from theorylab.probes.weight_patches import (
    GenerationTrace,
    apply_patches,
    chain_patches,
    context_growth_patches,
    dead_scale_refusals,
    depth_report,
    hf_chain_patches,
    hf_dead_scale_refusals,
    hf_patch_exactness,
    implicit_patch,
    layer_rank_stats,
    numerical_rank,
    patched,
    patched_greedy,
    query_only_outputs,
    refusal,
    with_context_states,
)
from theorylab.theory.patches import NotControllable, Patch


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


def test_layer_rank_stats_exact_answers():
    u, v = torch.arange(1.0, 4.0, dtype=torch.float64), torch.tensor([1.0, -2.0], dtype=torch.float64)
    p = Patch()
    p.add("a", torch.outer(u, v))
    p.add("b", torch.diag(torch.tensor([3.0, 0.3], dtype=torch.float64)))  # rank 2, σ₂/σ₁ = 0.1
    old = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    p.scales["s"] = (old, 2.5 * old)  # a multiple of the old scale: spread 0
    lo, hi, ratio, spread = layer_rank_stats(p)
    assert (lo, hi) == (1, 2) and ratio == pytest.approx(0.1, rel=1e-12) and spread == pytest.approx(0.0, abs=1e-15)
    p.scales["s"] = (old, old * torch.tensor([1.0, 1.0, 2.0], dtype=torch.float64))  # ratios 1, 1, 2: (2 - 1) / (4/3)
    assert layer_rank_stats(p)[3] == pytest.approx(0.75, rel=1e-12)


def test_query_only_outputs_is_the_plain_run_layer_by_layer():
    stack = make_stack("llama", 3, 8, seed=2)
    x = _prompt(8, 0)
    outs = query_only_outputs(stack, x)
    with torch.no_grad():
        assert torch.equal(outs[-1], stack(x)[-1])
        assert torch.equal(outs[0], stack.blocks[0](x)[-1])


@pytest.mark.parametrize("family", ["gemma", "moe"])
def test_depth_report_matches_the_chain_and_its_controls(family):
    stack = make_stack(family, 3, 16, seed=6)
    X = _prompt(16, 5, 3)
    other = torch.randn(16, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    rows = depth_report(stack, X, "output", other=other)
    res = chain_patches(stack, X, "output")
    assert [r["depth"] for r in rows] == [1, 2, 3] and [r["error"] for r in rows] == res.errors
    assert all(r["error"] <= 1e-10 * (1 + r["scale"]) for r in rows)
    assert min(r["no_patch"] for r in rows) > 1e-3 and min(r["other_query"] for r in rows) > 1e-3
    assert rows[0]["independent"] <= 1e-10 * (1 + rows[0]["scale"]) and rows[2]["independent"] > 1e-3
    assert all(r["rank_min"] == 1 and r["rank_max"] == 1 and r["sigma2_over_sigma1"] < 1e-8 for r in rows)
    norm = sum(torch.linalg.matrix_norm(f) ** 2 for f in res.patches[1].factors.values()) ** 0.5
    assert rows[1]["patch_norm"] == pytest.approx(float(norm), rel=1e-12)
    bare = depth_report(stack, X, "output")  # no other query: controls and ranks not measured
    assert [r["error"] for r in bare] == res.errors and all(r["independent"] != r["independent"] for r in bare)


def test_refusals_flag_a_dead_post_norm_scale_and_only_that():
    assert refusal(lambda: None) == (False, "returned a patch")
    flagged, message = refusal(lambda: (_ for _ in ()).throw(NotControllable("not input-controllable: x")))
    assert flagged is False and "input" in message
    block = make_stack("gemma", 1, 8, seed=0).blocks[0]
    X = _prompt(8, 4)
    target, tries = dead_scale_refusals(block, X, 3, ("output", "full"))
    assert float(block.g4[3].detach()) == -1.0 and target > 1e-3
    assert [(m, f) for m, f, _ in tries] == [("output", True), ("full", True)] and "(1 + g)" in tries[0][2]


def test_context_growth_patches_are_exact_and_their_norms_add_up():
    stack = in_context_regression_stack(2, seed=0)
    tokens = torch.randn(8, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    tokens[-1, -1] = 0.0
    rows = context_growth_patches(stack, tokens, 0.7, copy.deepcopy(stack).float())
    assert [r["i"] for r in rows] == list(range(1, 8))
    assert max(r["rel_error"] for r in rows) <= 1e-12 and max(r["rel_error32"] for r in rows) <= 1e-4
    assert rows[0]["increment_norm"] == rows[0]["patch_norm"]
    with torch.no_grad():
        pred = float(stack(torch.cat([tokens[:3], tokens[-1:]]))[-1, -1])
    assert rows[2]["prediction"] == pytest.approx(pred, rel=1e-12)
    assert rows[2]["sq_error"] == pytest.approx((pred - 0.7) ** 2)
    res = chain_patches(stack, torch.cat([tokens[:3], tokens[-1:]]))
    assert rows[2]["patch_norm"] == pytest.approx(float(res.patches[0].deltas["W1"].norm()), rel=1e-12)


def test_generation_trace_rows():
    trace = GenerationTrace([1, 2], [1, 3], [0.0, 0.5], [2.0, 3.0])
    assert trace.rows() == [
        dict(step=1, token_context=1, token_patched=1, logit_error=0.0, logit_scale=2.0),
        dict(step=2, token_context=2, token_patched=3, logit_error=0.5, logit_scale=3.0),
    ]


# --------------------------------------------------------------------------------------------
# Hugging Face
# --------------------------------------------------------------------------------------------

transformers = pytest.importorskip("transformers")

from theorylab.nn.hf import full_precision_norms, random_init  # noqa: E402

SMALL = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=1,
    head_dim=8,
    vocab_size=97,
)
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
    model = random_init(
        "gemma3",
        seed=0,
        dtype=torch.float32,
        hidden_size=1152,
        intermediate_size=6912,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=256,
        vocab_size=1024,
        sliding_window=512,
        layer_types=["sliding_attention", "full_attention"],
    )
    res = hf_chain_patches(model, _ids(12) % 1024)
    assert res.logit_error <= 1e-4 * (1 + float(res.logits_context.abs().max()))


def test_hf_patch_exactness_rows(hf_models):
    model = hf_models["gemma3"]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rows = hf_patch_exactness(model, _ids(7), (torch.float64, torch.float32))
    assert len(rows) == 3 * 3 * 2  # (float64 x 2 norms + float32) x 3 layers x 2 modes
    f64 = [r for r in rows if r["dtype"] == "float64" and r["norms"] == "float64"]
    native = [r for r in rows if r["dtype"] == "float64" and r["norms"] == "native"]
    assert max(r["logit_error"] / (1 + r["logit_scale"]) for r in f64) <= 1e-10
    assert min(r["logit_error"] for r in native) > 1e-10  # HF's float32 norms round
    assert all(r["rank_min"] == 1 == r["rank_max"] for r in rows)
    assert {r["layer"] for r in rows} == {1, 2, 3} and {r["mode"] for r in rows} == {"output", "full"}
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_hf_dead_scale_refusals_flag_and_restore(hf_models):
    model = hf_models["gemma3"]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tries = hf_dead_scale_refusals(model, _ids(6), 5)
    assert [(m, f) for m, f, _ in tries] == [("output", True), ("full", True)]
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    with full_precision_norms(model):
        hf_chain_patches(model, _ids(6))  # healthy again: no refusal
    with pytest.raises(ValueError, match="post-MLP norm"):
        hf_dead_scale_refusals(hf_models["llama"], _ids(6), 0)
