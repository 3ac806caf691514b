"""axial-networks: axis-shared layers (XNN) run on fields of any dimension; exact symmetry, cost and expressivity.

Paper: H. Kim, J. Park, J. Bruna, H. Yang, J. Lee, *Axial Neural Networks for Dimension-Free Foundation Models*,
arXiv 2510.13665 (NeurIPS 2025). The layers are `nn.axial` (SXConv, SXAttention, GX lift/message/readout, XCNN),
the GP toy is `data.gp_fields.GPKernelFields` (separable kernels: the card's deviation), the symmetry probe is
`probes.equivariance`, the classifier loop `train.axial`. Quick judges the exact consequences of axis sharing
(equivariance, dimension-free parameters, attention cost, the cross-shaped SX kernel, the SX/GX expressivity gap
by least squares) and GP accuracy in-dimension and zero-shot; the paper preset adds the per-d GP toy (claim 8)
and the PDE claims (`pde.py`): XViT against a full-attention FieldViT on the kit's 2-D tasks (9), multi-dimension
pretraining and fine-tuning on unseen dimensions (10), and the card's CPU-feasible mini-foundation test (11; also
the preset 'mini-foundation').
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from theorylab.core import RunContext, study
from theorylab.core.rng import seeded
from theorylab.data.gp_fields import GPKernelFields
from theorylab.nn.axial import (
    XCNN,
    GXLift,
    GXMessage,
    GXReadout,
    SXAttention,
    SXConv,
    axial_score_entries,
    full_score_entries,
)
from theorylab.probes.equivariance import max_equivariance_error
from theorylab.studies.axial_networks.config import PRESETS, AxialNetworksConfig
from theorylab.studies.axial_networks.figures import (
    figure_cost,
    figure_equivariance,
    figure_expressivity,
    figure_gp,
    figure_pde_transfer,
)
from theorylab.studies.axial_networks.judges import claims
from theorylab.studies.axial_networks.pde import mini_foundation, multidim_pretraining, x_comparable
from theorylab.train.axial import CNN3DBaseline, accuracy, train_classifier

PAPER = "Kim, Park, Bruna, Yang, Lee, arXiv 2510.13665 (NeurIPS 2025)"
EQ_SIZES = (7, 6, 5, 4)  # distinct sizes per axis, so a wrong transpose shows up as a shape error or a mismatch
EQ_CHANNELS = 4


def _gx_stack(c: int) -> nn.Module:
    return nn.Sequential(GXLift(c, c), GXMessage(c), GXMessage(c, message="attention"), GXReadout())


def _equivariance(cfg: AxialNetworksConfig, ctx: RunContext) -> pd.DataFrame:
    """Float32 max |f(Πx) − Πf(x)| over all d! axis permutations, PE off and (negative control) on, on features."""
    rows, c = [], EQ_CHANNELS
    for d in cfg.equivariance_dims:
        with seeded(ctx.seed(f"equivariance/{d}")):
            nets = {
                ("SXConv", False): SXConv(c, c),
                ("SXAttention", False): SXAttention(c, heads=2),
                ("GX lift+message+readout", False): _gx_stack(c),
            }
            for kind in ("sx", "gx"):
                for pe in (False, True):
                    nets[(f"XCNN-{kind.upper()}", pe)] = XCNN(c, width=8, layers=3, kind=kind, pos_embed=pe).features
        shape = (2, c, *EQ_SIZES[:d])
        for (layer, pe), net in nets.items():
            err = max_equivariance_error(net, shape, dtype=torch.float32, generator=ctx.generator(f"eq/{d}/{layer}"))
            rows.append(dict(layer=layer, d=d, pe=pe, error=err))
    return ctx.table("equivariance", pd.DataFrame(rows))


def _dimension_free(cfg: AxialNetworksConfig, ctx: RunContext) -> pd.DataFrame:
    """One state_dict on d = 1..4: parameter count, every parameter used, output shapes, a reload that changes
    nothing (tensors and outputs bit-identical)."""
    rows, gen = [], ctx.generator("dimension-free")
    for kind in ("sx", "gx"):
        with seeded(ctx.seed(f"dimension-free/{kind}")):
            net, other = XCNN(1, 8, 3, kind=kind), XCNN(1, 8, 3, kind=kind)
        before = {k: v.clone() for k, v in net.state_dict().items()}
        other.load_state_dict(net.state_dict())
        tensor_diff = max((other.state_dict()[k] - v).abs().max().item() for k, v in before.items())
        for d in (1, 2, 3, 4):
            sizes = (6, 5, 4, 3)[:d]
            x = torch.randn(2, 1, *sizes, generator=gen)
            net.zero_grad()
            feats = net.features(x)
            net(x).sum().backward()
            unused = sum(p.numel() for p in net.parameters() if p.grad is None or not p.grad.abs().sum() > 0)
            with torch.no_grad():
                out_diff = (other.features(x) - feats).abs().max().item()
            rows.append(
                dict(
                    kind=kind,
                    d=d,
                    params=sum(p.numel() for p in net.parameters()),
                    unused=unused,
                    shape=str(tuple(feats.shape)),
                    shape_ok=tuple(feats.shape) == (2, 8, *sizes),
                    logits_ok=tuple(net(x).shape) == (2, 2),
                    tensor_diff=tensor_diff,
                    output_diff=out_diff,
                )
            )
    return ctx.table("dimension_free", pd.DataFrame(rows))


def _attention_cost(cfg: AxialNetworksConfig, ctx: RunContext) -> pd.DataFrame:
    """Score entries per sample and head, counted from SXAttention's score tensors, against N Σ n_i and N²."""
    rng, gen = ctx.rng("cost shapes"), ctx.generator("cost")
    with seeded(ctx.seed("cost")):
        attn = SXAttention(4, heads=2)
    shapes = [("card", (16, 16, 16))] + [("sweep", (n,) * d) for d in (2, 3) for n in (4, 8, 12)]
    for _ in range(cfg.cost_shapes):
        d = int(rng.integers(1, 5))
        shapes.append(("random", tuple(int(n) for n in rng.integers(2, 13, size=d))))
    rows = []
    with torch.no_grad():
        for group, sp in shapes:
            attn(torch.randn(1, 4, *sp, generator=gen))
            rows.append(
                dict(
                    group=group,
                    shape=str(sp),
                    d=len(sp),
                    n=sp[0],
                    N=int(np.prod(sp)),
                    counted=attn.last_score_entries,
                    axial=axial_score_entries(sp),
                    full=full_score_entries(sp),
                )
            )
    return ctx.table("attention_cost", pd.DataFrame(rows))


def _sx_kernel(cfg: AxialNetworksConfig, ctx: RunContext) -> pd.DataFrame:
    """The impulse response of a linear SXConv (k = 5, no bias) at d = 2, 3: off-axis values and axis profiles."""
    rows = []
    for d in (2, 3):
        with seeded(ctx.seed(f"kernel/{d}")):
            conv = SXConv(1, 1, kernel_size=5, bias=False)
        n, c = 9, 4
        x = torch.zeros(1, 1, *[n] * d)
        x[(0, 0, *[c] * d)] = 1.0
        with torch.no_grad():
            y = conv(x)[0, 0]
        grid = torch.stack(torch.meshgrid(*[torch.arange(n)] * d, indexing="ij"))
        off = (grid != c).sum(0) > 1
        profiles = torch.stack([y[tuple(slice(None) if a == i else c for a in range(d))] for i in range(d)])
        rows.append(
            dict(
                d=d,
                off_axis=y[off].abs().max().item(),
                on_axis=profiles.abs().max().item(),
                profile_spread=(profiles - profiles[0]).abs().max().item(),
            )
        )
    return ctx.table("sx_kernel", pd.DataFrame(rows))


def _roll(x: torch.Tensor, shifts: dict[int, int]) -> torch.Tensor:
    return torch.roll(x, tuple(shifts.values()), tuple(2 + a for a in shifts))


TARGETS = {
    "laplacian": lambda x: sum(_roll(x, {i: 1}) + _roll(x, {i: -1}) - 2 * x for i in range(x.ndim - 2)),
    "dxdy": lambda x: (
        (_roll(x, {0: -1, 1: -1}) - _roll(x, {0: -1, 1: 1}) - _roll(x, {0: 1, 1: -1}) + _roll(x, {0: 1, 1: 1})) / 4
    ),
    "dx1": lambda x: (_roll(x, {0: -1}) - _roll(x, {0: 1})) / 2,
}
THEORY = {"laplacian": lambda d: 0.0, "dxdy": lambda d: 1.0, "dx1": lambda d: (d - 1) / d}


def _design(layer: nn.Module, weight: torch.Tensor, fwd, x: torch.Tensor) -> torch.Tensor:
    """Columns: the linear layer's output with one unit weight entry (the layer is linear in its weights)."""
    cols = []
    with torch.no_grad():
        for k in range(weight.numel()):
            weight.zero_()
            weight.view(-1)[k] = 1.0
            cols.append(fwd(x).reshape(-1))
    return torch.stack(cols, 1)


def _expressivity(cfg: AxialNetworksConfig, ctx: RunContext) -> pd.DataFrame:
    """Least-squares relative MSE of linear SX (SXConv k=3) and GX (GXLift 3×3 + GXReadout) layers on white noise."""
    gen, rows = ctx.generator("least squares"), []
    cases = [(2, cfg.ls_grid_2d, t, m) for t in TARGETS for m in ("SX", "GX")] + [
        (3, cfg.ls_grid_3d, "dx1", m) for m in ("SX", "GX")
    ]
    fields = {}
    for d, n, target, model in cases:
        if d not in fields:
            fields[d] = torch.randn(cfg.ls_fields, 1, *[n] * d, generator=gen, dtype=torch.float64)
        x = fields[d]
        if model == "SX":
            layer = SXConv(1, 1, 3, bias=False).double()
            fwd = layer
        else:
            layer, readout = GXLift(1, 1, 3, bias=False).double(), GXReadout()
            fwd = lambda v, lift=layer, ro=readout: ro(lift(v))  # noqa: E731
        A, y = _design(layer, layer.weight, fwd, x), TARGETS[target](x).reshape(-1, 1)
        w = torch.linalg.lstsq(A, y, driver="gelsd").solution
        rel = ((A @ w - y).square().sum() / y.square().sum()).item()
        rows.append(dict(model=model, d=d, n=n, target=target, rel_mse=rel, theory=THEORY[target](d)))
    return ctx.table("expressivity", pd.DataFrame(rows))


def _gp(cfg: AxialNetworksConfig, ctx: RunContext) -> pd.DataFrame:
    """XCNN trained on one dimension's GP fields, read held-out there and zero-shot on every field of the others."""
    data = {
        d: GPKernelFields(d, per_class=cfg.gp_per_class).generate(ctx.generator(f"gp/{d}")) for d in cfg.gp_eval_dims
    }
    tr = data[cfg.gp_train_dim]
    with seeded(ctx.seed("xcnn")):
        net = XCNN(1, cfg.xcnn_width, cfg.xcnn_n_layers, 3, 2).to(ctx.device)
    losses = train_classifier(
        net,
        tr["x"][tr["train"]],
        tr["y"][tr["train"]],
        cfg.epochs,
        cfg.batch,
        cfg.lr,
        ctx.generator("xcnn order"),
        ctx.check_finite,
        ctx.device,
    )
    ctx.scalar("xcnn_params", sum(p.numel() for p in net.parameters()))
    ctx.scalar("final_train_loss", losses[-1])
    rows = []
    for d, g in ctx.progress(data.items(), "GP accuracy per d"):
        idx = g["test"] if d == cfg.gp_train_dim else torch.arange(len(g["y"]))
        rows.append(
            dict(
                d=d,
                split="held-out" if d == cfg.gp_train_dim else "zero-shot",
                n=len(idx),
                accuracy=accuracy(net, g["x"][idx], g["y"][idx], device=ctx.device),
            )
        )
    return ctx.table("gp", pd.DataFrame(rows))


def _gp_all_dims(cfg: AxialNetworksConfig, ctx: RunContext) -> pd.DataFrame:
    """The paper toy: SXCNN, GXCNN and the 3D-CNN trained and tested (80/20) on each d, per seed."""
    rows = []
    for s in ctx.progress(range(cfg.all_dims_seeds), "paper toy seeds"):
        for d in cfg.gp_all_dims:
            g = GPKernelFields(d, per_class=cfg.gp_per_class).generate(ctx.generator(f"all/{s}/{d}"))
            makers = {
                "SXCNN": lambda: XCNN(1, cfg.sx_width, cfg.sx_n_layers, 3, 2),
                "GXCNN": lambda: XCNN(1, cfg.gx_width, cfg.gx_n_layers, 3, 2, kind="gx"),
                "3D-CNN": lambda: CNN3DBaseline(1, cfg.cnn_width, cfg.cnn_n_layers, 3, 2),
            }
            for name, make in makers.items():
                with seeded(ctx.seed(f"all/{s}/{d}/{name}")):
                    net = make()
                train_classifier(
                    net,
                    g["x"][g["train"]],
                    g["y"][g["train"]],
                    cfg.epochs,
                    cfg.batch,
                    cfg.lr,
                    ctx.generator(f"all/{s}/{d}/{name}/order"),
                    ctx.check_finite,
                    ctx.device,
                )
                rows.append(
                    dict(
                        seed=s,
                        d=d,
                        model=name,
                        accuracy=accuracy(net, g["x"][g["test"]], g["y"][g["test"]], device=ctx.device),
                    )
                )
    return ctx.table("gp_all_dims", pd.DataFrame(rows))


@study(
    "axial-networks",
    title="Axial networks: one set of axis-shared weights on fields of any dimension (exact symmetry, cost, "
    "expressivity, zero-shot GP accuracy)",
    paper=PAPER,
    config=AxialNetworksConfig,
    presets=PRESETS,
    family="architectures",
    claims=claims,
    # one thread on a shared 2-core machine
    cpu_threads=1,
)
def run(cfg: AxialNetworksConfig, ctx: RunContext) -> None:
    figure_equivariance(ctx, _equivariance(cfg, ctx))
    _dimension_free(cfg, ctx)
    figure_cost(ctx, _attention_cost(cfg, ctx))
    _sx_kernel(cfg, ctx)
    figure_expressivity(ctx, _expressivity(cfg, ctx))
    gp = _gp(cfg, ctx)
    all_dims = _gp_all_dims(cfg, ctx) if cfg.all_dims else None
    figure_gp(ctx, gp, all_dims)
    ctx.scalar("all_dims_trained", bool(cfg.all_dims))
    mini = mini_foundation(cfg, ctx) if cfg.mini_foundation else None
    ctx.scalar("mini_foundation_trained", bool(cfg.mini_foundation))
    multidim = None
    if cfg.pde_transformers:
        x_comparable(cfg, ctx)
        multidim = multidim_pretraining(cfg, ctx)
    ctx.scalar("pde_transformers_trained", bool(cfg.pde_transformers))
    figure_pde_transfer(ctx, mini, multidim)
