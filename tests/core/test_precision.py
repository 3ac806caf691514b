"""core.precision: the bf16 autocast choice, its kit use, and the CLI's --precision."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from theorylab.cli import app
from theorylab.core.context import RunContext
from theorylab.core.precision import autocast


def test_autocast_sets_the_matmul_dtype():
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)
    with autocast("fp32"):
        assert lin(x).dtype == torch.float32
    with autocast("bf16", "cpu"):
        assert lin(x).dtype == torch.bfloat16
    with RunContext(0).autocast("bf16"):
        assert lin(x).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16"):
        autocast("fp16")


def test_self_consistent_training_in_bf16_is_a_rounding_of_fp32():
    # the bf16 transport changes the training only by rounding: same seed, losses close, not identical
    from theorylab.data.corruptions import GaussianNoise
    from theorylab.nn.velocity import TimeMLP
    from theorylab.train.interpolants import train_self_consistent

    torch.manual_seed(0)
    y = torch.randn(256, 2)
    losses = {}
    for precision in ("fp32", "bf16"):
        torch.manual_seed(1)
        model = TimeMLP(2, 32, 2, 8)
        log = train_self_consistent(
            model,
            y,
            GaussianNoise(0.3),
            steps=20,
            batch=64,
            lr=1e-3,
            generator=torch.Generator().manual_seed(2),
            transport_steps=5,
            precision=precision,
        )
        losses[precision] = torch.tensor(log.losses)
        assert all(math.isfinite(v) for v in log.losses)
    assert not torch.equal(losses["fp32"], losses["bf16"])
    torch.testing.assert_close(losses["bf16"], losses["fp32"], rtol=0.05, atol=0.02)


def test_stacked_training_in_bf16_is_a_rounding_of_fp32_and_keeps_fp32_weights():
    # train_stacked(precision="bf16"): each step's forward under autocast, weights and optimiser in fp32; the loss
    # curve of two seeds trained side by side follows fp32's to rounding (ff-vs-attention trains so by default where
    # the CPU has bf16 units)
    from theorylab.nn.token_losses import next_token_loss
    from theorylab.nn.transformer_recipes import small_gpt
    from theorylab.train.batched import AdamWSchedule, StackedModels, train_stacked

    tokens = torch.randint(0, 32, (2, 16, 12), generator=torch.Generator().manual_seed(0))
    losses, dtypes = {}, {}
    for precision in ("fp32", "bf16"):
        models = StackedModels([small_gpt(32, 2, 2, 32, 12, seed) for seed in (1, 2)])
        log = train_stacked(
            models,
            lambda step: (tokens, tokens),
            next_token_loss,
            steps=40,
            optim=AdamWSchedule(lr=3e-3),
            log_every=1,
            precision=precision,
        )
        losses[precision] = torch.tensor(np.stack(log.losses))
        dtypes[precision] = {p.dtype for p in models.member(0).parameters()}
    assert dtypes["bf16"] == {torch.float32}
    assert not torch.equal(losses["fp32"], losses["bf16"])
    assert losses["bf16"][-1].max() < 0.8 * losses["bf16"][0].min()  # it learns the repeated batch
    torch.testing.assert_close(losses["bf16"], losses["fp32"], rtol=0.05, atol=0.05)


@pytest.mark.parametrize("objective", ["clm", "mlm"])
def test_language_model_training_in_bf16_is_a_rounding_of_fp32(objective):
    # train_language_model(precision="bf16"), as bilinear-attention-operator trains its encoder/decoder pairs
    from theorylab.nn.toy_transformer import ToyTransformer
    from theorylab.train.language import train_language_model

    stream = torch.randint(0, 12, (4000,), generator=torch.Generator().manual_seed(0))
    losses, dtypes = {}, {}
    for precision in ("fp32", "bf16"):
        model = ToyTransformer(d_model=32, n_heads=2, n_layers=1, mlp_width=64, vocab_size=13, max_len=16, seed=3)
        log = train_language_model(
            model,
            stream,
            objective=objective,
            steps=30,
            batch=16,
            length=16,
            lr=3e-3,
            generator=torch.Generator().manual_seed(1),
            mask_id=12,
            log_every=1,
            precision=precision,
        )
        losses[precision] = torch.tensor([row["loss"] for row in log])
        dtypes[precision] = {p.dtype for p in model.parameters()}
    assert dtypes["bf16"] == {torch.float32}
    assert not torch.equal(losses["fp32"], losses["bf16"])
    torch.testing.assert_close(losses["bf16"], losses["fp32"], rtol=0.05, atol=0.05)


def test_cli_precision(tmp_path: Path):
    runner = CliRunner()
    store = str(tmp_path / "store")
    bad = runner.invoke(app, ["run", "toy", "--precision", "fp16", "--store", store])
    assert bad.exit_code == 2 and "invalid value for '--precision'" in bad.output
    res = runner.invoke(app, ["run", "toy", "--precision", "bf16", "--json", "--store", store])
    assert res.exit_code == 0, res.output
    assert "no precision choice" in res.output and "--precision bf16 ignored" in res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["status"] == "done"


def test_precision_is_part_of_the_run_identity():
    from theorylab.core.precision import resolve
    from theorylab.core.study import get_study

    study = get_study("self-consistent-interpolants")
    # "auto" is resolved when the config is built, by this machine's hardware: fp32 on an AVX2 CPU, bf16 on one
    # with AMX or AVX512-BF16 (a fixed "fp32" here failed on the latter)
    assert study.make_config("quick").precision == resolve("auto", "cpu")
    assert study.make_config("quick", precision="fp32").precision == "fp32"
    assert study.make_config("quick", precision="bf16").precision == "bf16"
    with pytest.raises(Exception, match="precision"):
        study.make_config("quick", precision="fp16")


def test_auto_picks_bf16_only_where_the_hardware_has_it(tmp_path: Path):
    from theorylab.core.precision import cpu_flags, hardware_bf16, resolve

    assert resolve("auto", "cpu", flags={"avx2", "fma"}) == "fp32"  # AVX2 only: bf16 is slower there
    assert resolve("auto", "cpu", flags={"avx512f", "amx_bf16", "amx_tile"}) == "bf16"
    assert resolve("auto", "cpu", flags={"avx512_bf16"}) == "bf16"
    assert resolve("fp32", "cpu", flags={"amx_bf16"}) == "fp32" and resolve("bf16", "cpu", flags=set()) == "bf16"
    ok, why = hardware_bf16("cpu", flags={"sse2"})
    assert not ok and "AMX" in why
    if not torch.cuda.is_available():
        assert resolve("auto", "cuda") == "fp32"
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, bf16"):
        resolve("fp16")
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_bf16\n")
    assert cpu_flags(str(info)) == {"fpu", "avx2", "amx_bf16"}
    assert cpu_flags(str(tmp_path / "missing")) == set()


def test_a_config_records_the_choice_and_bf16_verdicts_say_so(monkeypatch):
    from theorylab.core import precision
    from theorylab.core.declared import BF16_DEPARTURE
    from theorylab.core.study import get_study

    sci = get_study("self-consistent-interpolants")
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2"})
    assert sci.make_config("quick").precision == "fp32"  # the default is auto: fp32 on an AVX2-only CPU
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"amx_bf16"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = sci.make_config("quick")
    assert cfg.precision == "bf16" and cfg.model_dump()["precision"] == "bf16"  # never "auto" in a stored config
    claim = sci.claims[0]
    from theorylab.core.study import Verdict

    plain = Verdict(claim.id, claim.statement, 1.0, 1.0, None, True, "ok")
    assert BF16_DEPARTURE in claim.declare(plain, cfg.model_dump(), "quick").departures
    assert BF16_DEPARTURE not in claim.declare(plain, {**cfg.model_dump(), "precision": "fp32"}, "quick").departures
