"""Reversible truncation of query/key weights."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from theorylab.nn.toy_transformer import ToyTransformer
from theorylab.probes.lowrank import delta_loss, laser_grid, laser_selection, pick_value_rank, truncate


def _model():
    return ToyTransformer(d_model=16, n_heads=2, n_layers=2, vocab_size=11, seed=0).double()


def test_truncation_sets_ranks_keeps_m_balanced_and_restores():
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    a = model.blocks[0].attn
    M0 = a.W_Q.transpose(1, 2) @ a.W_K
    with truncate(model, "qk", 3):
        M = a.W_Q.transpose(1, 2) @ a.W_K
        U, s, Vh = torch.linalg.svd(M0)
        best = (U[..., :3] * s[..., None, :3]) @ Vh[..., :3, :]
        assert torch.allclose(M, best, atol=1e-10)
        assert torch.allclose(a.W_Q.norm(dim=-1), a.W_K.norm(dim=-1))  # balanced gauge
    with truncate(model, "k", 2):
        assert int(torch.linalg.matrix_rank(a.W_K[0])) == 2 and int(torch.linalg.matrix_rank(a.W_Q[0])) == 8
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))


def test_delta_loss_is_zero_at_full_rank_and_restores_after_errors():
    model = _model()
    tokens = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(0))

    def loss(m):
        return m(tokens).pow(2).mean()

    assert delta_loss(model, loss, "q", 8) == 0.0
    assert delta_loss(model, loss, "q", 1) != 0.0
    before = model.blocks[1].attn.W_Q.detach().clone()
    with pytest.raises(RuntimeError):
        with truncate(model, "q", 1):
            raise RuntimeError("boom")
    assert torch.equal(model.blocks[1].attn.W_Q, before)
    with pytest.raises(ValueError, match="which"):
        with truncate(model, "v", 1):
            pass


def test_laser_grid_measures_each_truncation_and_restores():
    model = ToyTransformer(d_model=16, n_heads=2, n_layers=2, vocab_size=11, mlp_width=32, seed=0).double()
    before = [p.detach().clone() for p in model.parameters()]
    weights = [f"blocks.{i}.mlp.up.weight" for i in range(2)]
    x = torch.randint(11, (2, 6), generator=torch.Generator().manual_seed(0))

    def measure() -> dict:
        ranks = [int(torch.linalg.matrix_rank(dict(model.named_parameters())[w])) for w in weights]
        with torch.no_grad():
            return dict(ranks=ranks, out=float(model(x).sum()))

    rows = laser_grid(model, weights, (1, 3), measure)
    assert [(r["layer"], r["rank"], r["truncated"]) for r in rows] == [
        (-1, -1, False),
        (0, 1, True),
        (0, 3, True),
        (1, 1, True),
        (1, 3, True),
    ]
    full = rows[0]["ranks"]
    assert rows[1]["ranks"] == [1, full[1]] and rows[4]["ranks"] == [full[0], 3]
    assert rows[1]["out"] != rows[0]["out"]
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))


def _grid(val: list[tuple], test: list[tuple]) -> pd.DataFrame:
    """(layer, rank, icl_acc, perplexity) rows per split; layer -1 is the untouched model."""
    return pd.DataFrame(
        [
            dict(split=s, layer=l, rank=r, truncated=l >= 0, icl_acc=a, perplexity=p, n_layers=4)
            for s, rows in (("validation", val), ("test", test))
            for l, r, a, p in rows
        ]
    )


def test_laser_selection_picks_on_validation_and_reports_test():
    val = [(-1, -1, 0.3, 50.0), (0, 1, 0.9, 50.0), (2, 1, 0.5, 52.0), (3, 1, 0.6, 60.0), (3, 4, 0.4, 50.0)]
    test = [(l, r, a - 0.05, p) for l, r, a, p in val]
    pick, table = laser_selection(_grid(val, test))
    # layer 0 is early; layer 3 rank 1 costs 20% perplexity: layer 2 rank 1 (gain 0.2) wins
    assert (
        (pick["layer"], pick["rank"]) == (2, 1)
        and abs(pick["gain"] - 0.2) < 1e-12
        and abs(pick["ppl_change"] - 0.04) < 1e-12
    )
    assert len(table) == 4 and set(table["split"]) == {"test"}
    none, _ = laser_selection(_grid([(-1, -1, 0.3, 50.0), (3, 1, 0.6, 60.0)], [(-1, -1, 0.3, 50.0), (3, 1, 0.6, 60.0)]))
    assert none is None


def test_pick_value_rank_keeps_accuracy_on_validation():
    def rows(seed, table):
        return [
            dict(seed=seed, split=s, rank=r, P_noise=pn, P_answer=1 - pn, acc=a)
            for s in ("validation", "test")
            for r, (pn, a) in table.items()
        ]

    good = {-1: (0.5, 0.2), 0: (0.01, 0.0), 1: (0.02, 0.1), 4: (0.05, 0.3), 8: (0.1, 0.25)}
    lost = {-1: (0.5, 0.2), 0: (0.01, 0.0), 1: (0.3, 0.1), 4: (0.2, 0.15)}
    picked = pick_value_rank(pd.DataFrame(rows(0, good) + rows(1, lost))).set_index("seed")
    assert picked.loc[0, "rank"] == 4 and picked.loc[0, "kept_accuracy_on_validation"]  # rank 1 loses accuracy
    # none keeps it: lowest P(noise)
    assert picked.loc[1, "rank"] == 4 and not picked.loc[1, "kept_accuracy_on_validation"]
    assert picked.loc[0, "P_noise_untouched"] == 0.5 and picked.loc[0, "acc_no_layer"] == 0.0
