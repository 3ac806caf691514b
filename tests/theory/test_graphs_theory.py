"""theory.graphs against brute force (matrix powers, networkx, itertools) and exact constructions."""

from __future__ import annotations

import math

import networkx as nx
import pytest
import torch

from theorylab.data import graph_tokens as gt
from theorylab.theory import graphs as tg


@pytest.mark.parametrize("graph", [gt.shrikhande, gt.rook_graph])
def test_srg_walk_polynomial_matches_matrix_powers(graph):
    A = graph()
    assert tg.srg_parameters(A) == (16, 6, 2, 2)
    At = torch.eye(16, dtype=torch.float64)
    J = torch.ones(16, 16, dtype=torch.float64)
    for t in range(1, 12):
        At = At @ A
        a, b, c = tg.srg_walk_coefficients(6, 2, 2, t)
        assert torch.equal(At, a * torch.eye(16, dtype=torch.float64) + b * A + c * J)
    rw = gt.random_walk_tokens(A, 20)
    assert torch.allclose(rw, tg.srg_return_probabilities(6, 2, 2, 20).expand(16, 20), atol=1e-14, rtol=0)


def test_srg_parameters_of_other_graphs():
    petersen = torch.tensor(nx.to_numpy_array(nx.petersen_graph()))
    assert tg.srg_parameters(petersen) == (10, 3, 0, 1)
    assert tg.srg_parameters(torch.tensor(nx.to_numpy_array(nx.path_graph(5)))) is None
    assert tg.srg_closed_walks(3, 0, 1, 2) == 3 and tg.srg_closed_walks(3, 0, 1, 3) == 0  # triangle-free


def test_laplacian_reconstruction_and_adjacency_entry_needs_every_term():
    A = gt.erdos_renyi(16, 0.3, torch.Generator().manual_seed(0), 1)[0]
    lam, U = gt.spectral_decomposition(A, sign="random", generator=torch.Generator().manual_seed(1))
    assert torch.allclose(tg.laplacian_from_spectral(U, lam), gt.laplacian(A), atol=1e-12)
    i, j = torch.nonzero(A)[0].tolist()
    terms = tg.adjacency_entry_terms(U, lam, i, j)
    assert abs(float(terms.sum()) - 1.0) < 1e-12
    assert int((terms.abs() > 1e-3).sum()) >= 8  # the edge is spread over many eigenpairs, not carried by one


def test_rotate_eigenspace_cycle():
    C = torch.tensor(nx.to_numpy_array(nx.cycle_graph(12)))
    lam, U = gt.spectral_decomposition(C)
    spaces = tg.eigenspaces(lam)
    assert [b - a for a, b in spaces] == [1, 2, 2, 2, 2, 2, 1]
    p = spaces[1][0]
    V = tg.rotate_eigenspace(U, (p, p + 1), math.pi / 4)
    assert torch.allclose(tg.laplacian_from_spectral(V, lam), gt.laplacian(C), atol=1e-12)
    assert (V - U).abs().max() > 0.1
    W = tg.rotate_eigenspace(U, (p, p + 2), math.pi / 4)  # mixing two eigenspaces breaks the decomposition
    assert (tg.laplacian_from_spectral(W, lam) - gt.laplacian(C)).abs().max() > 1e-3


def test_walk_eigenvalues_count_components_and_traces():
    gen = torch.Generator().manual_seed(2)
    A, c = gt.component_unions(16, 50, gen)
    mu = tg.walk_eigenvalues(A)
    assert torch.equal(((mu - 1).abs() < 1e-9).sum(-1), c)
    P = gt.walk_matrix(A)
    for b in range(3):
        ev = torch.linalg.eigvals(P[b]).real.sort().values  # the non-symmetric P itself
        assert torch.allclose(ev, mu[b], atol=1e-8)
    tr = tg.walk_traces(A, 8)
    assert torch.allclose(tr, torch.stack([(mu**t).sum(-1) for t in range(1, 9)], -1), atol=1e-10)


def test_neighbourhood_components_and_k4_count_against_networkx():
    for A, nb, k4 in ((gt.shrikhande(), 1, 0), (gt.rook_graph(), 2, 8)):
        assert set(tg.neighbourhood_components(A).tolist()) == {nb} and tg.clique4_count(A) == k4
    A = gt.erdos_renyi(10, 0.5, torch.Generator().manual_seed(3), 1)[0]
    g = nx.from_numpy_array(A.numpy())
    want = [nx.number_connected_components(g.subgraph(list(g[v]))) for v in range(10)]
    assert tg.neighbourhood_components(A).tolist() == want
    assert tg.clique4_count(A) == sum(1 for c in nx.enumerate_all_cliques(g) if len(c) == 4)
