"""probes.tokenization_checks against facts known exactly about srg(16, 6, 2, 2) and the cycle C_n."""

from __future__ import annotations

import math

import networkx as nx
import pytest
import torch

from theorylab.data import graph_tokens as gt
from theorylab.probes import tokenization_checks as checks


@pytest.fixture(scope="module")
def pair():
    return checks.srg_pair(torch.Generator().manual_seed(3))


def test_random_walk_tokens_collide_on_the_pair_and_match_the_closed_form(pair):
    table = checks.rw_collision(*pair, horizon=6)
    assert list(table["t"]) == [1, 2, 3, 4, 5, 6]
    assert table["max_pair_diff"].max() < 1e-12 and table["max_closed_form_diff"].max() < 1e-12
    assert table["closed_form"].iloc[0] == 0.0 and table["closed_form"].iloc[1] == pytest.approx(1 / 6)  # no loops


def test_the_pair_differs_where_random_walks_cannot_see(pair):
    facts = checks.srg_facts(*pair).set_index("graph")
    assert facts.loc["rook", "k4_count"] == 8 and facts.loc["shrikhande", "k4_count"] == 0  # rows and columns
    assert not facts["isomorphic"].any()
    assert facts.loc["rook", "wl_hash"] == facts.loc["shrikhande", "wl_hash"]  # 1-WL cannot tell them apart
    assert facts.loc["rook", "spectrum"] == facts.loc["shrikhande", "spectrum"]  # cospectral


def test_neighbourhoods_read_from_adjacency_tokens(pair):
    comps = checks.neighbourhood_components(*pair).groupby("graph")["nbhd_components"].unique()
    assert list(comps["rook"]) == [2] and list(comps["shrikhande"]) == [1]  # two triangles vs one 6-cycle


def test_spectral_tokens_rebuild_the_laplacian_under_any_basis_choice():
    gen = torch.Generator().manual_seed(0)
    graphs = [("c8", torch.tensor(nx.to_numpy_array(nx.cycle_graph(8)), dtype=torch.float64))]
    graphs += [("er", a) for a in gt.erdos_renyi(12, 0.4, gen, 3)]
    table = checks.spectral_reconstruction(graphs, gen)
    assert list(table["n"]) == [8, 12, 12, 12] and table["max_error"].max() < 1e-10


@pytest.mark.parametrize("n", [6, 12])
def test_rotating_an_eigenspace_of_the_cycle_changes_tokens_not_the_graph(n):
    row = checks.basis_ambiguity(n).iloc[0]
    assert row["eigenvalue"] == pytest.approx(2 - 2 * math.cos(2 * math.pi / n), abs=1e-12)
    assert max(row["error_eigh"], row["error_rotated"], row["orthonormal_error"]) < 1e-12
    assert row["max_token_change"] > 0.1
