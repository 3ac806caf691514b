"""Context as weight patches, measured: compute, apply (reversibly) and check the implicit patches.

Given a model, a prompt whose last token is the query and whose earlier tokens are the context,
this module computes per layer the token-dependent rank-1 patches of the MLP matrices (and the
norm-scale patch of a Gemma block) that make the model run on the query *alone* produce the output
it produces *with* the context (Dherin et al., arXiv 2507.16003, Thm 2.2; Goldwaser et al., arXiv
2511.17864, Thms 3.1-5.x), and measures how exact that is.

- :func:`patched`: add parameter deltas inside a ``with`` block; the original tensors come back on
  exit, bit for bit, even after an error.
- :func:`implicit_patch`: the exact patch of one of our blocks from its query states, through the
  formulas of :mod:`theorylab.theory.patches` on the block's weights.
- :func:`chain_patches`: the constructive multi-layer algorithm on our block stacks
  (:mod:`theorylab.nn.blocks`): patch layer ℓ against the with-context state at the query, feed the
  patched output to layer ℓ+1's query-only run, repeat. ``independent=True`` is the wrong
  algorithm (every layer patched against the *unpatched* query-only run), kept as a control.
- :func:`hf_chain_patches`: the same on Hugging Face causal LMs (Gemma 3, Llama/Mistral/Qwen2,
  Mixtral), through their own module code, with forward hooks that compute each layer's patch
  during the query-only pass, just before its MLP runs.
- :func:`patched_greedy`: greedy generation with the context vs patched without it, the patches
  recomputed at every generated token (the patch is token dependent; no global one exists).
- :func:`numerical_rank`, :func:`spectrum`, :func:`layer_rank_stats`: the rank claim (singular values
  above ``tol·σ₁``) and the Gemma scale patch being a multiple of the old scale.
- :func:`depth_report`: per depth of a stack, the multi-layer algorithm's gap, the controls (no
  patch, independent patches, another query) and the rank statistics: one row per depth.
- :func:`context_growth_patches`: Dherin et al.'s Sec. 4 measurement: the implicit patch of a stack
  as the context grows one example at a time (its norm, the increment, the prediction).
- :func:`refusal`, :func:`dead_scale_refusals`, :func:`hf_dead_scale_refusals`: the controllability
  failure: a post-norm scale entry set to 0 must make the construction refuse, not return a patch.
- :func:`hf_patch_exactness`: :func:`hf_chain_patches` across precisions and patch modes, as rows.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from theorylab.theory.patches import (
    NotControllable,
    Patch,
    gated_mlp_patch,
    input_patch,
    moe_patch,
    post_norm_output_patch,
    rank1_to_target,
)


@contextmanager
def patched(module: nn.Module, deltas: Mapping[str, Tensor]) -> Iterator[None]:
    """Add ``deltas`` (parameter name -> ΔW, names as in ``module.named_parameters()``) inside the block."""
    params = dict(module.named_parameters())
    unknown = [k for k in deltas if k not in params]
    if unknown:
        raise KeyError(f"no parameter named {unknown} in {type(module).__name__}")
    saved = {k: params[k].detach().clone() for k in deltas}
    try:
        with torch.no_grad():
            for k, dw in deltas.items():
                params[k].add_(dw.to(params[k].dtype))
        yield
    finally:
        with torch.no_grad():
            for k, w in saved.items():
                params[k].copy_(w)


def spectrum(matrix: Tensor) -> Tensor:
    """Singular values in float64, largest first."""
    return torch.linalg.svdvals(matrix.detach().double())


def numerical_rank(matrix: Tensor, tol: float = 1e-8) -> int:
    """Number of singular values above ``tol · σ₁`` (0 for the zero matrix)."""
    s = spectrum(matrix)
    if s.numel() == 0 or float(s[0]) == 0.0:
        return 0
    return int((s > tol * s[0]).sum())


def max_abs(a: Tensor, b: Tensor) -> float:
    return float((a.detach().double() - b.detach().double()).abs().max())


def layer_rank_stats(patch: Patch, tol: float = 1e-8) -> tuple[int, int, float, float]:
    """One layer's patch: min and max numerical rank of its factors (singular values above ``tol·σ₁``,
    float64), the largest σ₂/σ₁, and the spread ``(max − min) / mean|·|`` of new/old norm scale
    (0 when the scale patch is a scalar multiple of the old scale, as Goldwaser et al.'s Gemma
    construction says; 0 when there is no scale patch)."""
    ranks, ratios, spread = [], [], 0.0
    for f in patch.factors.values():
        s = spectrum(f)
        ranks.append(int((s > tol * s[0]).sum()) if s[0] > 0 else 0)
        ratios.append(float(s[1] / s[0]) if s.numel() > 1 and s[0] > 0 else 0.0)
    for old, new in patch.scales.values():
        r = (new / old).double()
        spread = max(spread, float((r.max() - r.min()) / r.abs().mean()))
    return min(ranks), max(ranks), max(ratios), spread


def refusal(attempt: Callable[[], object]) -> tuple[bool, str]:
    """Run a patch construction that should fail: ``(flagged, message)``, flagged when it raised
    :class:`NotControllable` naming output controllability; ``(False, "returned a patch")`` when it did not raise."""
    try:
        attempt()
    except NotControllable as err:
        return "not output-controllable" in str(err), str(err)
    return False, "returned a patch"


# --------------------------------------------------------------------------------------------
# Our block stacks
# --------------------------------------------------------------------------------------------


def implicit_patch(
    block, with_ctx: Mapping[str, Tensor], query_only: Mapping[str, Tensor], mode: str = "output"
) -> Patch:
    """The exact patch of one of our blocks (:mod:`theorylab.nn.blocks`), given its query states.

    ``with_ctx`` / ``query_only``: the block's :meth:`~theorylab.nn.blocks.PatchableBlock.query_state`
    at the query with and without the context (the latter at the input the patched block will see).
    ``mode``: "output" (patch the outer map only) or "full" (input patches too, where the inner map
    sees the context: Llama, Gemma, post-norm). The vanilla block always takes Dherin's input patch.
    """
    if mode not in ("output", "full"):
        raise ValueError(f"mode must be 'output' or 'full', got {mode!r}")
    family = block.family
    full = mode == "full" and family in ("llama", "gemma", "postnorm")
    n_c = with_ctx["n"] if full else None
    if family == "vanilla":
        patch = Patch(info={"mode": "input"})
        patch.add("W1", input_patch(block.W1.detach(), query_only["n"], with_ctx["n"], what="W1"))
        return patch
    if family in ("llama", "parallel"):
        mlp = block.mlp_parts()
        return gated_mlp_patch(
            mlp.W_g,
            mlp.W_u,
            mlp.W_d,
            mlp.act,
            query_only["n"],
            with_ctx["out"] - query_only["h"],
            names=mlp.names,
            n_c=n_c,
        )
    if family == "gemma":
        mlp = block.mlp_parts()
        return gated_mlp_patch(
            mlp.W_g,
            mlp.W_u,
            mlp.W_d,
            mlp.act,
            query_only["n"],
            with_ctx["out"] - query_only["h"],
            names=mlp.names,
            n_c=n_c,
            post_scale=(1 + block.g4).detach(),
            post_scale_name="g4",
            eps=block.eps,
        )
    if family == "postnorm":
        # out = LN₂(h + W₂ gelu(W₁ h + b₁) + b₂): match the pre-norm sum, the norm then agrees.
        W1, b1, W2, b2 = (p.detach() for p in (block.W1, block.b1, block.W2, block.b2))
        patch = Patch(info={"mode": "full" if full else "output"})
        dW1 = None
        if full:
            dW1 = input_patch(W1, query_only["n"], n_c, what="W1")
            patch.add("W1", dW1)
        z = block.act((W1 if dW1 is None else W1 + dW1) @ query_only["n"] + b1)
        patch.add("W2", rank1_to_target(W2, z, with_ctx["pre"] - query_only["h"] - b2, what="W2"))
        return patch
    if family == "moe":
        W_g, W_u, W_d = (w.detach() for w in (block.W_g, block.W_u, block.W_d))
        e, dW, _ = moe_patch(
            W_g,
            W_u,
            W_d,
            block.act,
            query_only["selected"],
            query_only["weights"],
            query_only["n"],
            with_ctx["out"] - query_only["h"],
        )
        patch = Patch(info={"mode": "output", "expert": e})
        full_delta = torch.zeros_like(block.W_d)
        full_delta[e] = dW
        patch.add("W_d", full_delta, dW)
        return patch
    raise ValueError(f"no patch construction for block family {family!r}")


@dataclass
class ChainResult:
    """Per-layer patches and, at the query, with-context vs patched query-only outputs."""

    patches: list[Patch]
    with_context: list[Tensor]
    patched: list[Tensor]
    errors: list[float] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.errors = [max_abs(a, b) for a, b in zip(self.with_context, self.patched)]
        self.scales = [float(a.detach().abs().max()) for a in self.with_context]


def with_context_states(stack, X: Tensor) -> list[dict[str, Tensor]]:
    """Each layer's query state in the run on the whole prompt ``X`` (context rows, then the query)."""
    states = []
    H = X
    with torch.no_grad():
        for block in stack.blocks:
            states.append(block.query_state(H))
            H = block(H)
    return states


def apply_patches(stack, x: Tensor, patches: list[Patch]) -> list[Tensor]:
    """Run the query-only input ``x`` (shape ``(1, d)``) through the stack with each layer's patch."""
    outs = []
    with torch.no_grad():
        for block, patch in zip(stack.blocks, patches):
            with patched(block, patch.deltas):
                x = block(x)
            outs.append(x[-1])
    return outs


def chain_patches(stack, X: Tensor, mode: str = "output", *, independent: bool = False) -> ChainResult:
    """The multi-layer algorithm (Goldwaser et al., Sec. 4) on a stack: context ``X[:-1]``, query ``X[-1]``.

    ``independent=True`` computes every layer's patch from the *unpatched* query-only run (the wrong
    algorithm, as a control): exact for layer 1, off from layer 2 on.
    """
    ctx = with_context_states(stack, X)
    x = X[-1:]
    patches, outs = [], []
    with torch.no_grad():
        for i, block in enumerate(stack.blocks):
            patch = implicit_patch(block, ctx[i], block.query_state(x), mode)
            patches.append(patch)
            if independent:
                x = block(x)
            else:
                with patched(block, patch.deltas):
                    x = block(x)
                outs.append(x[-1])
    if independent:  # now run the query through every patched layer
        outs = apply_patches(stack, X[-1:], patches)
    return ChainResult(patches, [s["out"] for s in ctx], outs)


def query_only_outputs(stack, x: Tensor) -> list[Tensor]:
    """Each layer's output at the last row of the unpatched run on ``x`` alone (the "no patch" control)."""
    outs = []
    with torch.no_grad():
        for block in stack.blocks:
            x = block(x)
            outs.append(x[-1])
    return outs


def depth_report(stack, X: Tensor, mode: str = "output", *, other: Tensor | None = None) -> list[dict]:
    """One row per layer k (the output of the depth-k stack) of the multi-layer algorithm on ``X``.

    Columns: ``depth``, ``feasible`` (True), ``error`` (max |with context − patched|) and ``scale``
    (max |with context|), ``no_patch`` (gap of the query-only run without patches: the control that
    makes exactness non-vacuous), ``independent`` (gap with every layer patched against the unpatched
    run, Goldwaser et al.'s wrong algorithm), ``other_query`` (the patches applied to the query
    ``other`` with the same context vs its own with-context output: token dependence),
    ``rank_min``/``rank_max``/``sigma2_over_sigma1``/``scale_ratio_spread`` (:func:`layer_rank_stats`
    over layers 1..k) and ``patch_norm`` (Frobenius norm of layer k's patch). With ``other=None``
    the controls and ranks are NaN (e.g. in float32, where σ₂ sits at rounding noise). Raises
    :class:`NotControllable` when a layer has no exact patch.
    """
    depth = len(stack.blocks)
    plain = query_only_outputs(stack, X[-1:])
    res = chain_patches(stack, X, mode)
    indep = tokdep = None
    stats = [(np.nan, np.nan, np.nan, np.nan)] * depth
    if other is not None:
        stats = [layer_rank_stats(p) for p in res.patches]
        indep = chain_patches(stack, X, mode, independent=True).errors
        X2 = torch.cat([X[:-1], other[None]])
        ctx2 = [s["out"] for s in with_context_states(stack, X2)]
        tokdep = [max_abs(a, b) for a, b in zip(ctx2, apply_patches(stack, X2[-1:], res.patches))]
    rows = []
    for k in range(1, depth + 1):
        lo, hi, ratio, spread = (
            np.min([st[0] for st in stats[:k]]),
            np.max([st[1] for st in stats[:k]]),
            np.max([st[2] for st in stats[:k]]),
            np.max([st[3] for st in stats[:k]]),
        )
        rows.append(
            dict(
                depth=k,
                feasible=True,
                error=res.errors[k - 1],
                scale=res.scales[k - 1],
                no_patch=max_abs(res.with_context[k - 1], plain[k - 1]),
                independent=indep[k - 1] if indep else np.nan,
                other_query=tokdep[k - 1] if tokdep else np.nan,
                rank_min=lo,
                rank_max=hi,
                sigma2_over_sigma1=ratio,
                scale_ratio_spread=spread,
                patch_norm=float(sum(v**2 for v in res.patches[k - 1].frobenius().values()) ** 0.5),
            )
        )
    return rows


def dead_scale_refusals(
    block, X: Tensor, coordinate: int, modes: Sequence[str] = ("output",)
) -> tuple[float, list[tuple[str, bool, str]]]:
    """The output-controllability failure on one of our Gemma blocks: set entry ``coordinate`` of the
    post-MLP scale ``1 + g₄`` to 0 (g₄ = −1; left so: the block is changed) and try to patch.

    Returns ``|target|`` at that coordinate (what no patch can reach; the refusal matters when it is
    not ~0) and ``(mode, flagged, message)`` per mode (:func:`refusal`).
    """
    with torch.no_grad():
        block.g4[coordinate] = -1.0
    with_ctx, query = block.query_state(X), block.query_state(X[-1:])
    unreachable = float((with_ctx["out"] - query["h"])[coordinate].abs())
    tries = [(mode, *refusal(lambda mode=mode: implicit_patch(block, with_ctx, query, mode))) for mode in modes]
    return unreachable, tries


def context_growth_patches(stack, tokens: Tensor, y_query: float, stack32=None, name: str = "W1") -> list[dict]:
    """Dherin et al. (arXiv 2507.16003, Sec. 4): the implicit patch as the context grows.

    ``tokens``: one in-context regression prompt ``(T, d)`` (examples ``[x_j, y_j]``, then the query
    ``[x_q, 0]``); ``stack``: a stack of vanilla blocks reading the prediction from the query's last
    coordinate. For i = 1..T−1, the prompt of the first i examples and the query is patched
    (:func:`chain_patches`, output mode: the vanilla input patch on ``name``). Rows: ``i``,
    ``prediction`` (the model with context), ``implicit`` (patched without it), their ``rel_error``
    ``|Δ|/(1+|pred|)`` (and ``rel_error32`` in ``stack32``, a float32 copy, NaN without it),
    ``patch_norm`` ‖ΔW(C≤i)‖_F (all layers), ``increment_norm`` ‖ΔW(C≤i) − ΔW(C≤i−1)‖_F and
    ``sq_error`` of the prediction against ``y_query``.
    """
    rows, prev = [], None
    for i in range(1, len(tokens)):
        X = torch.cat([tokens[:i], tokens[-1:]])
        res = chain_patches(stack, X, "output")
        pred, implicit = float(res.with_context[-1][-1]), float(res.patched[-1][-1])
        rel32 = np.nan
        if stack32 is not None:
            res32 = chain_patches(stack32, X.float(), "output")
            pred32, implicit32 = float(res32.with_context[-1][-1]), float(res32.patched[-1][-1])
            rel32 = abs(pred32 - implicit32) / (1 + abs(pred32))
        flat = torch.cat([p.deltas[name].flatten() for p in res.patches])
        inc = flat if prev is None else flat - prev
        prev = flat
        rows.append(
            dict(
                i=i,
                prediction=pred,
                implicit=implicit,
                rel_error=abs(pred - implicit) / (1 + abs(pred)),
                rel_error32=rel32,
                patch_norm=float(flat.norm()),
                increment_norm=float(inc.norm()),
                sq_error=(pred - y_query) ** 2,
            )
        )
    return rows


# --------------------------------------------------------------------------------------------
# Hugging Face causal LMs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HFLayout:
    """Where a family keeps the pieces of a decoder layer (attribute paths under the layer)."""

    attn_out: str  # module whose output is the attention branch added to the residual
    mlp: str
    gate: str | None = None  # gated MLP: module paths under the layer
    up: str | None = None
    down: str | None = None
    post_norm: str | None = None  # post-MLP RMSNorm whose scale is 1 + weight (Gemma)
    moe: bool = False


HF_LAYOUTS = {
    "gemma3_text": HFLayout(
        "post_attention_layernorm", "mlp", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "post_feedforward_layernorm"
    ),
    "gemma2": HFLayout(
        "post_attention_layernorm", "mlp", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "post_feedforward_layernorm"
    ),
    "llama": HFLayout("self_attn", "mlp", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"),
    "mistral": HFLayout("self_attn", "mlp", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"),
    "qwen2": HFLayout("self_attn", "mlp", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"),
    "mixtral": HFLayout("self_attn", "mlp", moe=True),
}


def hf_layout(model: nn.Module) -> HFLayout:
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind == "gemma3":  # the multimodal wrapper's text config
        kind = "gemma3_text"
    if kind not in HF_LAYOUTS:
        raise ValueError(f"no patch layout for model_type {kind!r}; known: {sorted(HF_LAYOUTS)}")
    return HF_LAYOUTS[kind]


def hf_layers(model: nn.Module) -> list[nn.Module]:
    inner = getattr(model, "model", model)
    inner = getattr(inner, "language_model", inner)
    return list(inner.layers)


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def _hidden_arg(args, kwargs):
    return args[0] if args else kwargs["hidden_states"]


@dataclass
class HFChainResult:
    """Per-layer patches, the layers' query outputs and the logits at the query, with vs without context."""

    patches: list[Patch]
    with_context: list[Tensor]
    patched: list[Tensor]
    logits_context: Tensor
    logits_patched: Tensor
    errors: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.errors = [max_abs(a, b) for a, b in zip(self.with_context, self.patched)]

    @property
    def logit_error(self) -> float:
        return max_abs(self.logits_context, self.logits_patched)


def _capture_context(model, layers, layout, input_ids) -> tuple[list[dict[str, Tensor]], Tensor]:
    """One pass on the whole prompt: each layer's output and MLP input at the last position."""
    states: list[dict[str, Tensor]] = [{} for _ in layers]
    handles = []
    for i, layer in enumerate(layers):
        handles.append(
            layer.register_forward_hook(
                lambda _m, _a, out, i=i: states[i].__setitem__("out", _first(out)[0, -1].detach().clone())
            )
        )
        handles.append(
            layer.get_submodule(layout.mlp).register_forward_pre_hook(
                lambda _m, args, i=i: states[i].__setitem__("n", args[0][0, -1].detach().clone())
            )
        )
    try:
        with torch.no_grad():
            logits = model(input_ids=input_ids).logits[0, -1]
    finally:
        for h in handles:
            h.remove()
    return states, logits


def _moe_parts(moe: nn.Module) -> tuple[Tensor, Tensor, Tensor, Callable[[Tensor], Tensor], nn.Module]:
    """The experts' ``W_g, W_u`` (E, inter, d) and ``W_d`` (E, d, inter) (detached views of the fused
    ``gate_up_proj``/``down_proj``), their activation, and the experts module."""
    experts = moe.experts
    gate_up, down = experts.gate_up_proj.detach(), experts.down_proj.detach()
    inter = down.shape[-1]
    return gate_up[:, :inter], gate_up[:, inter:], down, experts.act_fn, experts


def hf_chain_patches(model: nn.Module, input_ids: Tensor, mode: str = "output") -> HFChainResult:
    """Patch every layer of a Hugging Face causal LM so its query-only run reproduces the with-context one.

    ``input_ids``: shape ``(1, T)``; the last token is the query, the earlier ones the context.
    The query-only pass runs the model's own forward on the last token with hooks: at each layer,
    once the attention branch is known, a pre-hook on the MLP (on ``down_proj`` for the output
    patch, so the inner activation is the one the module really computed) sets the patched weights;
    they are restored when the pass ends. ``mode="full"`` adds the input patches on gate/up.
    """
    if input_ids.dim() != 2 or input_ids.shape[0] != 1 or input_ids.shape[1] < 2:
        raise ValueError(
            f"input_ids must have shape (1, T) with T >= 2 (context + query), got {tuple(input_ids.shape)}"
        )
    layout = hf_layout(model)
    layers = hf_layers(model)
    ctx, logits_ctx = _capture_context(model, layers, layout, input_ids)
    patches: list[Patch] = [Patch() for _ in layers]
    outs: list[Tensor] = [None] * len(layers)  # type: ignore[list-item]
    query: list[dict[str, Tensor]] = [{} for _ in layers]
    saved: list[tuple[Tensor, Tensor]] = []  # (parameter, original) to restore
    handles = []

    def add(param: Tensor, delta: Tensor) -> None:
        saved.append((param, param.detach().clone()))
        param.add_(delta.to(param.dtype))

    def name_of(layer_idx: int, path: str) -> str:
        return f"layers.{layer_idx}.{path}"

    def target(i: int) -> Tensor:
        """What layer i's MLP branch must add at the query: with-context output minus the query-only residual."""
        return ctx[i]["out"] - (query[i]["x"] + query[i]["a"])

    for i, layer in enumerate(layers):
        q = query[i]

        def on_layer_in(_m, args, kwargs, q=q):
            q["x"] = _hidden_arg(args, kwargs)[0, -1].detach().clone()

        def on_attn(_m, _a, out, q=q):
            q["a"] = _first(out)[0, -1].detach().clone()

        def on_layer_out(_m, _a, out, i=i):
            outs[i] = _first(out)[0, -1].detach().clone()

        handles.append(layer.register_forward_pre_hook(on_layer_in, with_kwargs=True))
        handles.append(layer.get_submodule(layout.attn_out).register_forward_hook(on_attn))
        handles.append(layer.register_forward_hook(on_layer_out))

        if layout.moe:
            moe = layer.get_submodule(layout.mlp)

            def on_router(_m, _a, out, i=i):
                _, scores, selected = out
                query[i]["weights"], query[i]["selected"] = scores[-1].detach(), selected[-1].detach()

            def on_experts(_m, args, i=i, moe=moe):
                n_x = args[0][-1].detach()
                W_g, W_u, W_d, act, module = _moe_parts(moe)
                e, dW, _ = moe_patch(
                    W_g, W_u, W_d, act, query[i]["selected"], query[i]["weights"].to(n_x.dtype), n_x, target(i)
                )
                full = torch.zeros_like(module.down_proj)
                full[e] = dW
                patches[i].add(name_of(i, f"{layout.mlp}.experts.down_proj"), full, dW)
                patches[i].info.update(mode="output", expert=e)
                add(module.down_proj, full)

            handles.append(moe.gate.register_forward_hook(on_router))
            handles.append(moe.experts.register_forward_pre_hook(on_experts))
            continue

        gate, up, down = (layer.get_submodule(p) for p in (layout.gate, layout.up, layout.down))

        def on_mlp(_m, args, i=i, gate=gate, up=up):
            n_x = args[0][0, -1].detach()
            query[i]["n"] = n_x
            if mode == "full":
                for mod, path in ((gate, layout.gate), (up, layout.up)):
                    dW = input_patch(mod.weight.detach(), n_x, ctx[i]["n"].to(n_x.dtype), what=path)
                    patches[i].add(name_of(i, f"{path}.weight"), dW)
                    add(mod.weight, dW)
            patches[i].info["mode"] = mode

        def on_down(_m, args, i=i, layer=layer, down=down):
            z = args[0][0, -1].detach()
            t = target(i)
            if layout.post_norm is None:
                dW = rank1_to_target(down.weight.detach(), z, t, what=layout.down)
            else:
                norm = layer.get_submodule(layout.post_norm)
                scale = 1 + norm.weight.detach().to(t.dtype)
                dW, new_scale = post_norm_output_patch(
                    down.weight.detach(), z, t, scale, norm.eps, what=layout.down, norm=layout.post_norm
                )
                patches[i].deltas[name_of(i, f"{layout.post_norm}.weight")] = new_scale - scale
                patches[i].scales[name_of(i, f"{layout.post_norm}.weight")] = (scale, new_scale)
                add(norm.weight, new_scale - scale)
            patches[i].add(name_of(i, f"{layout.down}.weight"), dW)
            add(down.weight, dW)

        handles.append(layer.get_submodule(layout.mlp).register_forward_pre_hook(on_mlp))
        handles.append(down.register_forward_pre_hook(on_down))

    try:
        with torch.no_grad():
            logits_q = model(input_ids=input_ids[:, -1:]).logits[0, -1]
    finally:
        for h in handles:
            h.remove()
        with torch.no_grad():
            for param, original in reversed(saved):
                param.copy_(original)
    return HFChainResult(patches, [s["out"] for s in ctx], outs, logits_ctx, logits_q)


@dataclass
class GenerationTrace:
    """Greedy tokens with the context and patched without it, and per-step logit gaps."""

    tokens_context: list[int]
    tokens_patched: list[int]
    logit_errors: list[float]
    logit_scales: list[float]

    @property
    def identical(self) -> bool:
        return self.tokens_context == self.tokens_patched

    def rows(self) -> list[dict]:
        """One row per generated token: ``step`` (from 1), both tokens, the logit gap and scale."""
        steps = zip(self.tokens_context, self.tokens_patched, self.logit_errors, self.logit_scales)
        return [
            dict(step=step + 1, token_context=tc, token_patched=tp, logit_error=err, logit_scale=sc)
            for step, (tc, tp, err, sc) in enumerate(steps)
        ]


def patched_greedy(model: nn.Module, prompt_ids: Tensor, steps: int, mode: str = "output") -> GenerationTrace:
    """Greedy generation two ways: the model on the growing prompt, and the patched query-only model.

    At step s the query is the last token so far and the context all earlier ones; the patched run
    sees only the query, with patches recomputed from the with-context pass at that step. Each
    stream continues from its *own* argmax, so a single wrong token would show.
    """
    ids_c = prompt_ids.clone()
    ids_p = prompt_ids.clone()
    tok_c, tok_p, errs, scales = [], [], [], []
    for _ in range(steps):
        with torch.no_grad():
            logits_c = model(input_ids=ids_c).logits[0, -1]
        res = hf_chain_patches(model, ids_p, mode)
        errs.append(max_abs(res.logits_context, res.logits_patched))
        scales.append(float(res.logits_context.abs().max()))
        nc, np_ = int(torch.argmax(logits_c)), int(torch.argmax(res.logits_patched))
        tok_c.append(nc)
        tok_p.append(np_)
        ids_c = torch.cat([ids_c, ids_c.new_tensor([[nc]])], dim=1)
        ids_p = torch.cat([ids_p, ids_p.new_tensor([[np_]])], dim=1)
    return GenerationTrace(tok_c, tok_p, errs, scales)


def hf_patch_exactness(
    model: nn.Module,
    input_ids: Tensor,
    dtypes: Sequence[torch.dtype] = (torch.float64,),
    modes: Sequence[str] = ("output", "full"),
) -> list[dict]:
    """:func:`hf_chain_patches` on ``model`` cast to each of ``dtypes``, in each of ``modes``: one row per layer.

    In float64 it runs twice, ``norms="float64"`` (RMSNorms at the input's precision,
    :func:`theorylab.nn.hf.full_precision_norms`) and ``norms="native"`` (HF's own float32 norms);
    other precisions run natively on a copy. Rows: ``dtype``, ``norms``, ``mode``, ``layer`` (from 1),
    ``error``/``scale`` at the layer's query output, ``logit_error``/``logit_scale`` at the logits,
    ``rank_max``/``rank_min`` over all patches (tolerance 1e-8 in float64, 1e-3 otherwise).
    """
    from theorylab.nn.hf import full_precision_norms

    rows = []
    for dtype in dtypes:
        name = str(dtype).removeprefix("torch.")
        m = model if dtype == torch.float64 else copy.deepcopy(model).to(dtype)
        for norms in ("float64", "native") if dtype == torch.float64 else ("native",):
            for mode in modes:
                if norms == "float64":
                    with full_precision_norms(m):
                        res = hf_chain_patches(m, input_ids, mode)
                else:
                    res = hf_chain_patches(m, input_ids, mode)
                tol = 1e-8 if dtype == torch.float64 else 1e-3
                ranks = [numerical_rank(f, tol) for p in res.patches for f in p.factors.values()]
                for layer, err in enumerate(res.errors):
                    rows.append(
                        dict(
                            dtype=name,
                            norms=norms,
                            mode=mode,
                            layer=layer + 1,
                            error=err,
                            scale=float(res.with_context[layer].abs().max()),
                            logit_error=res.logit_error,
                            logit_scale=float(res.logits_context.abs().max()),
                            rank_max=max(ranks),
                            rank_min=min(ranks),
                        )
                    )
        del m
    return rows


def hf_dead_scale_refusals(
    model: nn.Module, input_ids: Tensor, coordinate: int, layer: int = 0, modes: Sequence[str] = ("output", "full")
) -> list[tuple[str, bool, str]]:
    """The output-controllability failure on a Hugging Face model with a post-MLP norm (Gemma 2/3):
    entry ``coordinate`` of layer ``layer``'s post-feedforward scale ``1 + w`` set to 0 (w = −1),
    :func:`hf_chain_patches` tried in each mode (norms in full precision); ``(mode, flagged, message)``
    per mode (:func:`refusal`). The weight is restored on exit, bit for bit, even after an error."""
    from theorylab.nn.hf import full_precision_norms

    layout = hf_layout(model)
    if layout.post_norm is None:
        raise ValueError(f"{type(model).__name__} has no post-MLP norm whose scale could be set to 0")
    norm = hf_layers(model)[layer].get_submodule(layout.post_norm)
    saved = norm.weight.detach().clone()

    def attempt(mode: str) -> None:
        with full_precision_norms(model):
            hf_chain_patches(model, input_ids, mode)

    try:
        with torch.no_grad():
            norm.weight[coordinate] = -1.0
        return [(mode, *refusal(lambda mode=mode: attempt(mode))) for mode in modes]
    finally:
        with torch.no_grad():
            norm.weight.copy_(saved)


__all__ = [
    "ChainResult",
    "GenerationTrace",
    "HFChainResult",
    "HFLayout",
    "HF_LAYOUTS",
    "NotControllable",
    "apply_patches",
    "chain_patches",
    "context_growth_patches",
    "dead_scale_refusals",
    "depth_report",
    "hf_chain_patches",
    "hf_dead_scale_refusals",
    "hf_layers",
    "hf_layout",
    "hf_patch_exactness",
    "implicit_patch",
    "layer_rank_stats",
    "max_abs",
    "numerical_rank",
    "patched",
    "patched_greedy",
    "query_only_outputs",
    "refusal",
    "spectrum",
    "with_context_states",
]
