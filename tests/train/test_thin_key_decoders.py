"""The full and thin-key decoders at toy size: shapes, parameter counts, tables."""

from __future__ import annotations

import math

import pytest
import torch

from theorylab.train.thin_key_decoders import thin_key_decoders


def _run(thin):
    stream = torch.arange(2000) % 7
    return thin_key_decoders(
        stream,
        7,
        width=16,
        heads=2,
        layers=1,
        context=16,
        batch=4,
        steps=3,
        lr=1e-3,
        thin_fraction=thin,
        rank_fractions=(0.5,),
        eval_batches=1,
        init_seed=0,
        eval_generator=torch.Generator().manual_seed(0),
        data_generator=lambda name: torch.Generator().manual_seed(len(name)),
    )


def test_thin_key_decoder_has_a_quarter_of_the_query_key_parameters():
    trunc, ranks, lms = _run(0.25)
    assert list(lms["variant"]) == ["full", "thin keys"] and lms["d_select"].tolist() == [8, 2]
    assert lms.iloc[1]["qk_params"] * 4 == lms.iloc[0]["qk_params"]
    assert lms["perplexity"].to_numpy() == pytest.approx(lms["held_out_loss"].map(math.exp).to_numpy())
    assert set(trunc["which"]) == {"q", "k", "qk"} and trunc["rank"].tolist() == [4, 4, 4] and len(ranks) == 2


def test_without_a_thin_fraction_only_the_full_decoder_is_trained():
    _, _, lms = _run(None)
    assert list(lms["variant"]) == ["full"]
