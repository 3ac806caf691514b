"""Online SGD of the two-layer net on an index model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from theorylab.data.index_models import IndexModel
from theorylab.train.online_index import train_two_layer_online


def test_two_layer_net_learns_he2_and_reports_checkpoints():
    model = IndexModel.make(20, "he2", np.random.default_rng(0))
    seen = []
    rows = train_two_layer_online(
        model,
        32,
        0.05,
        32,
        (200.0, 100.0),
        torch.Generator().manual_seed(0),
        np.random.default_rng(1),
        on_loss=lambda loss, n: seen.append(n),
    )
    assert [(r["alpha"], r["n"]) for r in rows] == [(0.0, 0), (100.0, 2000), (200.0, 4000)]
    assert seen[-1] == 4000 and np.isnan(rows[0]["loss"])
    assert rows[0]["capture"] < 0.5 and rows[-1]["capture"] > 0.8


def test_a_divergence_callback_can_stop_training():
    model = IndexModel.make(10, "he2", np.random.default_rng(0))

    def stop(loss, n):
        raise RuntimeError(f"stop at {n}")

    with pytest.raises(RuntimeError, match="stop at 8"):
        train_two_layer_online(
            model, 4, 0.1, 8, (10.0,), torch.Generator().manual_seed(0), np.random.default_rng(1), on_loss=stop
        )
