"""data.graph_tokens against networkx (tasks, generators, srg pair) and PyTorch Geometric (RWSE, Laplacian PE)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from theorylab.data import graph_tokens as gt


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _nx(A: torch.Tensor) -> nx.Graph:
    return nx.from_numpy_array(A.numpy())


def test_srg_pair_is_srg_16_6_2_2_non_isomorphic_with_equal_wl_colours():
    S, R = _nx(gt.shrikhande()), _nx(gt.rook_graph())
    for g in (S, R):
        assert nx.is_strongly_regular(g) and nx.is_regular(g) and {d for _, d in g.degree} == {6}
        assert g.number_of_nodes() == 16 and g.number_of_edges() == 48
        assert nx.intersection_array(g) == ([6, 3], [1, 2])  # distance-regular, diameter 2: λ = 2, μ = 2
    assert not nx.is_isomorphic(S, R)
    for g in (S, R):
        nx.set_node_attributes(g, "0", "colour")  # uniform initial colour (hash without attributes warns)
    assert nx.weisfeiler_lehman_graph_hash(S, node_attr="colour", iterations=5) == nx.weisfeiler_lehman_graph_hash(
        R, node_attr="colour", iterations=5
    )
    assert nx.is_isomorphic(R, nx.cartesian_product(nx.complete_graph(4), nx.complete_graph(4)))
    cliques = lambda g: sum(1 for c in nx.enumerate_all_cliques(g) if len(c) == 4)  # noqa: E731
    assert (cliques(S), cliques(R)) == (0, 8)


@pytest.mark.parametrize("kind", gt.KINDS)
def test_token_shapes_padding_and_size(kind):
    A = gt.erdos_renyi(10, 0.4, _g(), 3)
    tok = gt.tokenize(A, kind, 14, generator=_g(1))
    assert tok.shape == (3, 14, gt.token_size(kind, 14))
    assert bool((tok[:, 10:] == 0).all())  # padding tokens are zero
    with pytest.raises(ValueError, match="n_max"):
        gt.tokenize(A, kind, 8)


def test_adjacency_tokens_roundtrip_under_relabelling():
    A = gt.erdos_renyi(12, 0.3, _g(), 4)
    tok = gt.tokenize(A, "adjacency", 16)
    assert torch.equal(gt.adjacency_from_tokens(tok, 16)[:, :12, :12], A)
    shuffled = tok[:, torch.randperm(16, generator=_g(3))]  # a set of tokens: their order carries nothing
    assert torch.equal(gt.adjacency_from_tokens(shuffled, 16), gt.adjacency_from_tokens(tok, 16))


def test_random_walk_tokens_match_pyg_add_random_walk_pe():
    tg = pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data
    from torch_geometric.transforms import AddRandomWalkPE

    A = gt.erdos_renyi(14, 0.25, _g(4), 1)[0]  # may hold isolated nodes: PyG's rows are 0 there too
    ei = torch.nonzero(A).T.contiguous()
    pe = AddRandomWalkPE(walk_length=16, attr_name="pe")(Data(edge_index=ei, num_nodes=14)).pe
    ours = gt.tokenize(A, "random_walk", rw_steps=16)
    assert tg is not None and torch.allclose(ours, pe.double(), atol=1e-6), (ours - pe).abs().max()


def test_spectral_tokens_match_pyg_laplacian_pe_up_to_sign():
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    gen = _g(5)
    while True:  # a connected graph with a simple spectrum: eigenvectors unique up to sign
        A = gt.erdos_renyi(12, 0.4, gen, 1)[0]
        lam = torch.linalg.eigvalsh(gt.laplacian(A, "normalized"))
        if nx.is_connected(_nx(A)) and bool((lam.diff() > 1e-4).all()):
            break
    k = 5
    ei = torch.nonzero(A).T.contiguous()
    pe = AddLaplacianEigenvectorPE(k, attr_name="pe", is_undirected=True)(Data(edge_index=ei, num_nodes=12)).pe
    tok = gt.tokenize(A, "spectral", laplacian_kind="normalized", sign="random", generator=gen)
    ours = tok[:, 1 : k + 1]  # PyG drops the trivial eigenvector
    assert torch.allclose(ours.abs(), pe.double().abs(), atol=1e-4), (ours.abs() - pe.abs()).abs().max()
    assert torch.allclose(tok[0, 12:], lam, atol=1e-10)


def test_spectral_sign_and_rotation_policies_keep_the_decomposition():
    A = torch.tensor(nx.to_numpy_array(nx.cycle_graph(8)))  # repeated eigenvalues
    L = gt.laplacian(A)
    for basis in ("eigh", "random_rotation"):
        lam, U = gt.spectral_decomposition(A, basis=basis, sign="random", generator=_g(6))
        assert torch.allclose((U * lam) @ U.T, L, atol=1e-12)
        assert torch.allclose(U.T @ U, torch.eye(8, dtype=U.dtype), atol=1e-12)
    lam, U0 = gt.spectral_decomposition(A)
    _, U1 = gt.spectral_decomposition(A, basis="random_rotation", generator=_g(7))
    assert (U0 - U1).abs().max() > 0.05  # a different basis of the same eigenspaces
    with pytest.raises(ValueError, match="Generator"):
        gt.spectral_decomposition(A, sign="random")


def test_random_sign_flip_acts_on_eigenvector_columns_only():
    tok = gt.tokenize(gt.erdos_renyi(10, 0.4, _g(), 2), "concat", 10, generator=_g(1))
    out = gt.random_sign_flip(tok, "concat", 10, _g(2))
    cols = gt.eigenvector_columns("concat", 10)
    keep = torch.ones(tok.shape[-1], dtype=torch.bool)
    keep[cols] = False
    assert torch.equal(out[..., keep], tok[..., keep])
    assert torch.equal(out[..., cols].abs(), tok[..., cols].abs()) and not torch.equal(out, tok)


def test_component_unions_against_networkx():
    A, c = gt.component_unions(16, 300, _g(8))
    assert set(c.tolist()) == {1, 2, 3, 4}
    for a, cc in zip(A, c):
        g = _nx(a)
        comps = list(nx.connected_components(g))
        assert len(comps) == int(cc) and min(len(x) for x in comps) >= 2
    assert torch.equal(gt.component_counts(A), c)
    one = gt.component_union(12, 3, _g(9))
    assert nx.number_connected_components(_nx(one)) == 3


def test_generators_erdos_renyi_connected_regular():
    A = gt.erdos_renyi(30, 0.2, _g(10), 400)
    dens = float(A.sum() / (400 * 30 * 29))
    assert abs(dens - 0.2) < 0.01  # 400 * 435 edges: std of the density ~ 1e-3
    for s in range(20):
        assert nx.is_connected(_nx(gt.random_connected(9, _g(s))))
    R = gt.random_regular(12, 3, _g(11))
    assert set(_nx(R).degree[v] for v in range(12)) == {3}
    with pytest.raises(ValueError):
        gt.random_regular(7, 3, _g())


@pytest.mark.parametrize("task", gt.TASKS)
def test_tasks_against_networkx(task):
    gen = _g(12)
    A = gt.task_graphs(task, 12, 60, gen)
    y, pairs = gt.task_labels(task, A, gen)
    for b in range(60):
        g = _nx(A[b])
        if task == "degree":
            assert y[b].tolist() == [g.degree[v] for v in range(12)]
        elif task == "components":
            assert int(y[b]) + 1 == nx.number_connected_components(g)
        elif task == "in_K4":
            k4 = {v for c in nx.enumerate_all_cliques(g) if len(c) == 4 for v in c}
            assert y[b].tolist() == [int(v in k4) for v in range(12)]
        elif task == "lambda2_threshold":
            lam2 = np.sort(nx.laplacian_spectrum(g))[1]
            assert int(y[b]) == int(lam2 > 0.5)
        else:
            i, j = pairs[b].tolist()
            assert i != j and int(y[b]) == int(g.has_edge(i, j))
    if task == "edge_query":
        assert 0.3 < float(y.float().mean()) < 0.7  # balanced by construction
        marked = gt.mark_pairs(gt.tokenize(A, "adjacency"), pairs)
        assert bool((marked[..., -1].sum(-1) == 2).all())


def test_relabelled_pairs_are_isomorphic_copies():
    S, R = gt.relabelled_pairs(gt.shrikhande(), gt.rook_graph(), 3, _g(13))
    for s, r in zip(S, R):
        assert nx.is_isomorphic(_nx(s), _nx(gt.shrikhande())) and nx.is_isomorphic(_nx(r), _nx(gt.rook_graph()))
    assert not torch.equal(S[0], S[1])


def test_bad_input_fails_with_one_line():
    with pytest.raises(ValueError, match="symmetric"):
        gt.tokenize(torch.triu(torch.ones(4, 4), 1), "adjacency")
    with pytest.raises(ValueError, match="unknown tokenization"):
        gt.tokenize(gt.rook_graph(), "laplacian")
    with pytest.raises(ValueError, match="unknown task"):
        gt.task_labels("triangles", gt.rook_graph()[None])
