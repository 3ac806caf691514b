"""Axial layers and networks: against dense reference convolutions and explicit attention, exact axis-permutation
and periodic-shift equivariance in float64, negative controls the probe must catch, one state_dict on 1-D to 4-D
fields, parameter counts and attention score counts."""

from __future__ import annotations

import copy
import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from theorylab.nn.axial import (
    XCNN,
    AxialPatchEmbed,
    AxialPatchUnembed,
    GXLift,
    GXMessage,
    GXReadout,
    SXAttention,
    SXConv,
    XViT,
    axial_score_entries,
    full_score_entries,
    repeat_to_2d,
)
from theorylab.probes.equivariance import equivariance_errors, max_equivariance_error

TIGHT = 1e-12  # float64: the only differences are the summation order over axes (a few ulps)


def _seeded(module_fn, seed=0):
    torch.manual_seed(seed)
    return module_fn().double()


def _circular(x: torch.Tensor, pad: int) -> torch.Tensor:
    return F.pad(x, (pad,) * (2 * (x.ndim - 2)), mode="circular")


# ------------------------------------------------------------------------------------------------------------------
# Layers against independent computations
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("aggregate", ["sum", "mean"])
def test_sxconv_is_a_dense_conv_with_a_cross_shaped_kernel(aggregate):
    """SXConv (shift-and-add implementation) equals torch's conv1d/2d/3d with the cross kernel Σ_i k(z_i) Π δ(z_j),
    values and gradients."""
    m = _seeded(lambda: SXConv(3, 4, 5, aggregate=aggregate))
    W, b = m.weight, m.bias
    for shape, conv in [((2, 3, 9), F.conv1d), ((2, 3, 7, 6), F.conv2d), ((2, 3, 5, 6, 7), F.conv3d)]:
        d = len(shape) - 2
        K = torch.zeros(4, 3, *[5] * d, dtype=torch.float64)
        for i in range(d):
            idx = [slice(None), slice(None)] + [2] * d
            idx[2 + i] = slice(None)
            K[tuple(idx)] += W
        if aggregate == "mean":
            K = K / d
        x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
        ref = conv(_circular(x, 2), K) + b.view(-1, *[1] * d)
        out = m(x)
        assert out.shape == (2, 4, *shape[2:])
        assert (out - ref).abs().max() < TIGHT
        g = torch.randn_like(ref)
        ours = torch.autograd.grad((out * g).sum(), (x, W, b))
        theirs = torch.autograd.grad((ref * g).sum(), (x, W, b))
        for a, c in zip(ours, theirs):
            assert (a - c).abs().max() < 1e-11


def test_sxconv_second_derivatives():
    m = _seeded(lambda: SXConv(2, 2, 3))
    x = torch.randn(1, 2, 4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(m, (x,))
    assert torch.autograd.gradgradcheck(m, (x,))


def test_sx_impulse_response_is_a_symmetric_cross():
    """Card claim 4: a linear SXConv's response to a unit impulse is zero off the axes and has one profile per axis."""
    m = _seeded(lambda: SXConv(1, 1, 5, bias=False))
    n, c = 11, 5
    x = torch.zeros(1, 1, n, n, n, dtype=torch.float64)
    x[..., c, c, c] = 1
    y = m(x)[0, 0]
    on_axis = torch.zeros_like(y, dtype=torch.bool)
    on_axis[:, c, c] = on_axis[c, :, c] = on_axis[c, c, :] = True
    assert y[~on_axis].abs().max() == 0
    profiles = [y[:, c, c], y[c, :, c], y[c, c, :]]
    for p in profiles[1:]:
        assert (p - profiles[0]).abs().max() < TIGHT
    assert profiles[0].abs().max() > 0.1  # not trivially zero
    # the profile is the flipped kernel (cross-correlation), the centre counted once per axis
    expected = torch.zeros(n, dtype=torch.float64)
    expected[c - 2 : c + 3] = m.weight[0, 0].flip(0)
    expected[c] = 3 * m.weight[0, 0, 2]
    assert (profiles[0] - expected).abs().max() < TIGHT


def test_gx_lift_and_readout_is_a_symmetrised_pair_conv():
    """Linear GX (lift + mean readout) = dense conv with the mean over ordered axis pairs (i, j) of the 2-D kernel laid
    on plane (i, j), first kernel axis along i (card: 'GX is a symmetrised Conv2d')."""
    lift = _seeded(lambda: GXLift(2, 3, 3))
    read = GXReadout()
    W, b = lift.weight, lift.bias
    for shape, conv in [((2, 2, 6, 5), F.conv2d), ((2, 2, 4, 5, 6), F.conv3d)]:
        d = len(shape) - 2
        K = torch.zeros(3, 2, *[3] * d, dtype=torch.float64)
        pairs = [(i, j) for i in range(d) for j in range(d) if i != j]
        for i, j in pairs:
            embedded = W.reshape(3, 2, 3, 3, *[1] * (d - 2))  # kernel axes (i, j, rest)
            rest = [a for a in range(d) if a not in (i, j)]
            pad = [0] * (2 * (d - 2))
            for r in range(d - 2):  # put the 2-D kernel at the centre of the remaining axes
                pad[2 * (d - 3 - r)] = pad[2 * (d - 3 - r) + 1] = 1
            embedded = F.pad(embedded, pad) if d > 2 else embedded
            K += embedded.permute(0, 1, *(2 + [i, j, *rest].index(a) for a in range(d)))
        K = K / len(pairs)
        x = torch.randn(*shape, dtype=torch.float64)
        ref = conv(_circular(x, 1), K) + b.view(-1, *[1] * d)
        h = lift(x)
        assert h.shape == (2, d, 3, *shape[2:])
        assert (read(h) - ref).abs().max() < TIGHT


def test_patch_embed_and_unembed_are_dense_patch_convolutions():
    """AxialPatchEmbed = a stride-p conv with the patch kernel mean_i w(z_i)/p^(d-1) (1-D weights along axis i, box
    average along the others); AxialPatchUnembed = a stride-p transposed conv with mean_i w(z_i) (nearest upsampling
    along the others). Checked in 2-D and 3-D against torch's dense conv / conv_transpose."""
    torch.manual_seed(0)
    p = 3
    emb = AxialPatchEmbed(2, 4, p).double()
    une = AxialPatchUnembed(4, 2, p).double()
    for d, conv, convT in [(2, F.conv2d, F.conv_transpose2d), (3, F.conv3d, F.conv_transpose3d)]:
        Ke = sum(
            emb.weight.view(4, 2, *[p if a == i else 1 for a in range(d)]).expand(4, 2, *[p] * d) for i in range(d)
        ) / (d * p ** (d - 1))
        Ku = (
            sum(une.weight.view(4, 2, *[p if a == i else 1 for a in range(d)]).expand(4, 2, *[p] * d) for i in range(d))
            / d
        )
        x = torch.randn(2, 2, *[p * m for m in (2, 3, 1)[:d]], dtype=torch.float64)
        h = emb(x)
        assert (h - (conv(x, Ke, stride=p) + emb.bias.view(-1, *[1] * d))).abs().max() < TIGHT
        assert (une(h) - (convT(h, Ku, stride=p) + une.bias.view(-1, *[1] * d))).abs().max() < TIGHT


def _line_attention_reference(att: SXAttention, x: torch.Tensor) -> torch.Tensor:
    """Explicit loops over every axis line, with torch's scaled_dot_product_attention, summed over axes."""
    B, C, *sp = x.shape
    H = att.heads
    lin_qkv, lin_out = att.attn.qkv, att.attn.out
    total = torch.zeros(B, *sp, C, dtype=x.dtype)
    xl = x.movedim(1, -1)
    for i in range(len(sp)):
        others = [range(n) for a, n in enumerate(sp) if a != i]
        for pos in itertools.product(*others):
            idx = [slice(None)]
            it = iter(pos)
            for a in range(len(sp)):
                idx.append(slice(None) if a == i else next(it))
            line = xl[tuple(idx)]  # (B, n_i, C)
            q, k, v = lin_qkv(line).chunk(3, dim=-1)
            q, k, v = (t.unflatten(-1, (H, C // H)).transpose(1, 2) for t in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(-2)
            total[tuple(idx)] += a
    if att.aggregate == "mean":
        total = total / len(sp)
    return lin_out(total).movedim(-1, 1)


@pytest.mark.parametrize("aggregate", ["sum", "mean"])
def test_sxattention_matches_explicit_attention_along_each_line(aggregate):
    att = _seeded(lambda: SXAttention(6, heads=2, aggregate=aggregate))
    for shape in [(2, 6, 5), (2, 6, 4, 3), (1, 6, 3, 2, 4)]:
        x = torch.randn(*shape, dtype=torch.float64)
        assert (att(x) - _line_attention_reference(att, x)).abs().max() < TIGHT


def test_attention_score_entries_are_n_times_sum_of_sizes():
    """Card claim 3: 3·16⁴ = 196,608 scores per head for 16³ (vs 16⁶ for full attention), counted from the score
    tensors actually formed, and N·Σ n_i for 5 random shapes."""
    att = SXAttention(4, heads=2)
    with torch.no_grad():
        att(torch.randn(1, 4, 16, 16, 16))
    assert att.last_score_entries == 196_608 == axial_score_entries((16, 16, 16))
    assert full_score_entries((16, 16, 16)) == 16_777_216
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        d = int(torch.randint(1, 4, (1,), generator=g))
        sp = tuple(int(n) for n in torch.randint(2, 9, (d,), generator=g))
        with torch.no_grad():
            att(torch.randn(3, 4, *sp))
        assert att.last_score_entries == math.prod(sp) * sum(sp)


# ------------------------------------------------------------------------------------------------------------------
# Equivariance (through the probe)
# ------------------------------------------------------------------------------------------------------------------

SHAPES_2D3D = [(2, 2, 6, 7), (2, 2, 4, 5, 6)]  # unequal sizes, so a wrong transpose changes shapes or values


def _gx_stack(message):
    return nn.Sequential(GXLift(2, 4), GXMessage(4, message=message, heads=2))


@pytest.mark.parametrize(
    "name, build, output",
    [
        ("SXConv", lambda: SXConv(2, 3, 3), "field"),
        ("SXAttention", lambda: SXAttention(2, heads=2), "field"),
        ("GXLift", lambda: GXLift(2, 3), "nodes"),
        ("GXLift+GXMessage(conv)", lambda: _gx_stack("conv"), "nodes"),
        ("GXLift+GXMessage(attention)", lambda: _gx_stack("attention"), "nodes"),
        ("GX lift+message+readout", lambda: nn.Sequential(*_gx_stack("conv"), GXReadout()), "field"),
    ],
)
def test_layers_are_axis_permutation_equivariant_in_float64(name, build, output):
    df = equivariance_errors(_seeded(build), SHAPES_2D3D, output=output)
    assert len(df) == 2 + 6  # every permutation of 2 and of 3 axes
    assert df["error"].max() < TIGHT, df
    assert df["scale"].min() > 0.1


def test_sxconv_equivariance_at_four_axes():
    assert max_equivariance_error(_seeded(lambda: SXConv(1, 2, 3)), (1, 1, 3, 4, 5, 2)) < TIGHT


@pytest.mark.parametrize(
    "build, shapes",
    [
        (lambda: XCNN(), [(2, 1, 8, 6), (2, 1, 6, 5, 4)]),
        (lambda: XCNN(kind="gx", width=8), [(2, 1, 8, 6), (2, 1, 6, 5, 4)]),
        (lambda: XCNN(kind="gx", width=8, message="attention", heads=2, norm=True), [(2, 1, 8, 6), (2, 1, 6, 5, 4)]),
        (lambda: XCNN(norm=True, activation="relu"), [(2, 1, 8, 6), (2, 1, 6, 5, 4)]),
        (lambda: XViT(), [(2, 1, 8, 12), (2, 1, 4, 8, 12)]),
    ],
)
def test_networks_are_axis_permutation_equivariant_in_float64(build, shapes):
    net = _seeded(build)
    if isinstance(net, XCNN):  # logits are invariant, the feature field is equivariant
        assert max_equivariance_error(net, shapes) < TIGHT
        assert max_equivariance_error(net.features, shapes) < TIGHT
    else:
        df = equivariance_errors(net, shapes)
        assert df["error"].max() < TIGHT and df["scale"].min() > 0.1


def test_float32_equivariance_at_card_sizes():
    """Card claim 1 in float32 (≤ 1e-5) for the quick XCNN and an XViT on 32² and 16³."""
    torch.manual_seed(0)
    shapes = [(2, 1, 32, 32), (2, 1, 16, 16, 16)]
    assert max_equivariance_error(XCNN().features, shapes, dtype=torch.float32) <= 1e-5
    assert max_equivariance_error(XViT(), shapes, dtype=torch.float32) <= 1e-5


@pytest.mark.parametrize(
    "build, shapes, shifts",
    [
        (lambda: SXConv(2, 3, 5), SHAPES_2D3D, [1, 3]),
        (lambda: nn.Sequential(*_gx_stack("conv"), GXReadout()), SHAPES_2D3D, [1, 2]),
        (lambda: XCNN().features, [(2, 1, 8, 6), (2, 1, 6, 5, 4)], [1, 2]),
        (lambda: XCNN(kind="gx", width=8).features, [(2, 1, 8, 6), (2, 1, 6, 5, 4)], [1]),
    ],
)
def test_conv_layers_are_periodic_shift_equivariant(build, shapes, shifts):
    torch.manual_seed(0)
    model = build()
    for shape in shapes:
        per_axis = tuple(range(1, len(shape) - 1))  # a different shift on every axis
        assert max_equivariance_error(model, [shape], perms=None, shifts=[*shifts, per_axis]) < TIGHT


def test_xvit_is_shift_equivariant_by_whole_patches_only():
    net = _seeded(lambda: XViT(patch=4))
    shapes = [(2, 1, 8, 12), (2, 1, 4, 8, 12)]
    assert max_equivariance_error(net, shapes, perms=None, shifts=[4, 8]) < TIGHT
    assert max_equivariance_error(net, shapes, perms=None, shifts=[1]) > 1e-2  # a sub-patch shift is not


# ------------------------------------------------------------------------------------------------------------------
# Negative controls: the same probe must see broken equivariance
# ------------------------------------------------------------------------------------------------------------------


def _apply_along(conv: nn.Conv1d, x: torch.Tensor, i: int) -> torch.Tensor:
    """A torch Conv1d along spatial axis i of ``[B, C, *spatial]``, the other axes folded into the batch."""
    xl = x.movedim(1, -1).movedim(1 + i, -2)  # (B, *others, n_i, C)
    lines = xl.reshape(-1, *xl.shape[-2:]).transpose(1, 2)  # (M, C, n_i)
    y = conv(lines).transpose(1, 2).reshape(*xl.shape[:-1], -1)  # (B, *others, n_i, C')
    return y.movedim(-2, 1 + i).movedim(-1, 1)


class _PerAxisConv(nn.Module):
    """An axial conv with one weight set per axis (not shared): a dimension-bound, non-equivariant control."""

    def __init__(self, d: int):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(2, 3, 3, padding=1, padding_mode="circular") for _ in range(d))

    def forward(self, x):
        return sum(_apply_along(conv, x, i) for i, conv in enumerate(self.convs))


def test_negative_controls_fail_the_probe():
    torch.manual_seed(0)
    plain = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, padding_mode="circular"),
        nn.GELU(),
        nn.Conv2d(4, 1, 3, padding=1, padding_mode="circular"),
    )
    assert max_equivariance_error(plain, (2, 1, 8, 8)) > 1e-3
    assert max_equivariance_error(plain, (2, 1, 8, 8), perms=None, shifts=[1, 3]) < TIGHT  # but shift-equivariant
    per_axis = _PerAxisConv(2)
    assert max_equivariance_error(per_axis, (2, 2, 6, 7), perms=None) < TIGHT  # identity: deterministic
    assert max_equivariance_error(per_axis, (2, 2, 6, 7)) > 1e-3
    shared = _PerAxisConv(2)
    shared.convs[1] = shared.convs[0]  # the same control with its weights shared is equivariant
    assert max_equivariance_error(shared, (2, 2, 6, 7)) < TIGHT
    # positional encodings on (card claim 1's negative control): the features and the logits
    for net in (XCNN(pos_embed=True), XCNN(kind="gx", width=8, pos_embed=True), XViT(pos_embed=True)):
        shapes = [(2, 1, 8, 12), (2, 1, 4, 8, 12)]
        fn = net.features if isinstance(net, XCNN) else net
        assert max_equivariance_error(fn, shapes) > 1e-3
    assert max_equivariance_error(XCNN(pos_embed=True), [(4, 1, 8, 12)]) > 1e-4


# ------------------------------------------------------------------------------------------------------------------
# Dimension-free parameters
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, shapes",
    [
        (lambda: XCNN(), [(2, 1, 16), (2, 1, 8, 6), (2, 1, 6, 5, 4), (1, 1, 4, 3, 4, 3)]),
        (lambda: XCNN(kind="gx", width=8, layers=3), [(2, 1, 16), (2, 1, 8, 6), (2, 1, 6, 5, 4), (1, 1, 4, 3, 4, 3)]),
        (lambda: XViT(patch=2), [(2, 1, 16), (2, 1, 8, 6), (2, 1, 6, 4, 4), (1, 1, 4, 2, 4, 2)]),
    ],
)
def test_one_state_dict_runs_on_every_dimension(build, shapes):
    """Card claim 2: one state_dict, loaded into a model built elsewhere, runs unchanged on d = 1..4; the parameter
    count does not change, and the outputs are [B, out] logits or [B, C, *spatial] fields."""
    torch.manual_seed(0)
    a = build()
    torch.manual_seed(1)
    b = build()
    before = {k: v.clone() for k, v in a.state_dict().items()}
    b.load_state_dict(a.state_dict())
    count = sum(p.numel() for p in a.parameters())
    with torch.no_grad():
        for shape in shapes:
            ya, yb = a(torch.ones(*shape)), b(torch.ones(*shape))
            x = torch.randn(*shape)
            assert torch.equal(a(x), b(x))
            if isinstance(a, XCNN):
                assert ya.shape == (shape[0], 2)
                assert a.features(x).shape == (shape[0], a.width, *shape[2:])
            else:
                assert ya.shape == shape and yb.shape == shape
    assert sum(p.numel() for p in a.parameters()) == count
    assert all(torch.equal(before[k], v) for k, v in a.state_dict().items())


def test_parameter_counts_follow_the_architecture():
    """Card quick size: 3 SXConv layers of 16 channels, k=3, mean+std pooling, 2 classes: 1,698 (≈ 1.7k)."""
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(XCNN()) == (1 * 16 * 3 + 16) + 2 * (16 * 16 * 3 + 16) + (32 * 2 + 2) == 1698
    w, k = 32, 3  # paper's GXCNN: 1 lift + 4 message rounds
    lift, msg = w * k * k + w, w * w * k + w * w * k * k + w
    assert count(XCNN(kind="gx", width=w, layers=5)) == lift + 4 * msg + (2 * w * 2 + 2)
    assert count(XCNN(width=64, layers=5)) == (64 * 3 + 64) + 4 * (64 * 64 * 3 + 64) + (128 * 2 + 2)


def test_models_batch_over_seeds_with_vmap():
    """Several XCNNs (one per seed) run as one torch.func.vmap computation, forward and gradient, through the custom
    autograd function of SXConv; they match the models run one by one."""
    from torch.func import functional_call, grad, stack_module_state, vmap

    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        models.append(XCNN().double())
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    x = torch.randn(4, 1, 8, 6, dtype=torch.float64)
    y = torch.tensor([0, 1, 1, 0])
    f = lambda p, b, x: functional_call(base, (p, b), (x,))  # noqa: E731
    out = vmap(f, in_dims=(0, 0, None))(params, buffers, x)
    loss = lambda p, b: F.cross_entropy(f(p, b, x), y)  # noqa: E731
    grads = vmap(grad(loss))(params, buffers)
    for i, m in enumerate(models):
        assert (out[i] - m(x)).abs().max() < TIGHT
        F.cross_entropy(m(x), y).backward()
        for name, p in m.named_parameters():
            assert (grads[name][i] - p.grad).abs().max() < TIGHT


def test_gx_repeat_trick_keeps_the_added_axis_constant():
    """A 1-D field runs through GX as its repeat to [n, n]; every GX layer keeps the added axis constant, so the 1-D
    features are the 2-D features at any point of that axis."""
    net = _seeded(lambda: XCNN(kind="gx", width=6, layers=3))
    x = torch.randn(2, 1, 10, dtype=torch.float64)
    with torch.no_grad():
        h = net.act(net.lift(repeat_to_2d(x)))
        for msg in net.messages:
            h = msg(h)
        two_d = net.readout(h)  # (B, width, 10, 10)
        one_d = net.features(x)
    assert two_d.shape == (2, 6, 10, 10) and one_d.shape == (2, 6, 10)
    assert (two_d - two_d[..., :1]).abs().max() < TIGHT
    assert (two_d[..., 3] - one_d).abs().max() < TIGHT


# ------------------------------------------------------------------------------------------------------------------
# Bad inputs
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: SXConv(1, 2, 4), "odd kernel_size"),
        (lambda: SXConv(1, 2, 3, aggregate="max"), "aggregate"),
        (lambda: SXConv(2, 2)(torch.randn(1, 3, 8)), r"\[B, 2, n_1"),
        (lambda: SXConv(2, 2)(torch.randn(1, 2)), r"\[B, 2, n_1"),
        (lambda: SXAttention(6, heads=4), "divisible by heads"),
        (lambda: GXLift(1, 2, 5)(torch.randn(1, 1, 8, 1)), "circular padding"),
        (lambda: GXMessage(4)(torch.randn(1, 3, 4, 5, 5)), "node features"),
        (lambda: GXReadout()(torch.randn(1, 4, 5, 5)), "node features"),
        (lambda: XCNN(kind="fx"), "kind"),
        (lambda: XCNN(activation="swish"), "activation"),
        (lambda: XViT(patch=4)(torch.randn(1, 1, 8, 6)), "divisible by patch"),
        (lambda: XCNN(pos_embed=True, max_dims=2)(torch.randn(1, 1, 4, 4, 4)), "at most 2 axes"),
    ],
)
def test_bad_inputs_fail_with_one_clear_line(call, match):
    with pytest.raises(ValueError, match=match) as err:
        call()
    assert "\n" not in str(err.value)
