"""Encoder/decoder pairs: shared initialisation, tracking steps, final per-head rows."""

from __future__ import annotations

import math

import torch

from theorylab.train.encoder_decoder import train_encoder_decoder_pairs


def _run(seeds=(3, 4), steps=4, log_every=2):
    stream = torch.randint(0, 7, (2000,), generator=torch.Generator().manual_seed(0))
    calls = []

    def data(seed, kind):
        calls.append((seed, kind))
        return torch.Generator().manual_seed(10 * seed + (kind == "decoder"))

    track, finals = train_encoder_decoder_pairs(
        stream,
        7,
        width=16,
        heads=2,
        layers=2,
        context=8,
        batch=4,
        steps=steps,
        lr=1e-3,
        log_every=log_every,
        init_seeds=list(seeds),
        data_generator=data,
    )
    return track, finals, calls


def test_pairs_share_their_init_and_log_every_step_count():
    track, finals, calls = _run()
    assert calls == [(0, "encoder"), (0, "decoder"), (1, "encoder"), (1, "decoder")]
    assert list(track.columns) == ["kind", "seed", "step", "loss", "symmetry", "directionality"]
    first = track[(track["seed"] == 0) & (track["kind"] == "encoder")]
    assert first["step"].tolist() == [0, 1, 3, 4] and math.isnan(
        first["loss"].iloc[0]
    )  # before training, then after steps 0, 2, 3
    start = track[track["step"] == 0].set_index(["seed", "kind"])["symmetry"]
    assert (
        start[(0, "encoder")] == start[(0, "decoder")] and start[(1, "encoder")] == start[(1, "decoder")]
    )  # same init seed
    assert start[(0, "encoder")] != start[(1, "encoder")]
    assert len(finals) == 2 * 2 * 2 * 2 and {r["family"] for r in finals} == {
        "encoder",
        "decoder",
    }  # seeds x kinds x layers x heads
    assert all(r["d"] == 16 and r["small_singular"] >= 8 for r in finals)  # rank M <= d_h = 8


def test_training_moves_the_operators_reproducibly():
    track, finals, _ = _run(seeds=(3,), steps=3, log_every=3)
    again, finals_again, _ = _run(seeds=(3,), steps=3, log_every=3)
    assert track.equals(again) and [r["symmetry"] for r in finals] == [r["symmetry"] for r in finals_again]
    enc = track[track["kind"] == "encoder"].set_index("step")["symmetry"]
    assert enc[0] != enc[3]
