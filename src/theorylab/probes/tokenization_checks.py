"""Exact checks of graph tokenizations: what a tokenization keeps of a graph, as tables of numbers.

Bechler-Speicher, Yehudai, Harari, Sanford, Globerson & Bruna, *Lost in Tokenization*, arXiv 2605.22471 (2026):

- random-walk return probabilities of the two srg(16, 6, 2, 2) graphs (Shrikhande and the 4x4 rook's graph) coincide
  with each other and with the strongly-regular closed form (``theory.graphs.srg_return_probabilities``), while the
  graphs differ (K4 counts, isomorphism; 1-WL does not tell them apart);
- adjacency tokens hold the graph, so the components of each vertex's neighbourhood read back from them separate
  the pair (rook: two triangles; Shrikhande: one 6-cycle);
- spectral tokens with k = n rebuild the Laplacian exactly for any choice of eigenvector signs and rotations within
  an eigenspace, yet those choices change the tokens (the C_n basis ambiguity).

Each function takes plain arguments and a generator and returns a DataFrame; the study names the tables.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pandas as pd
import torch

from theorylab.data import graph_tokens as gt
from theorylab.theory import graphs as tg

__all__ = [
    "basis_ambiguity",
    "neighbourhood_components",
    "rw_collision",
    "spectral_reconstruction",
    "srg_facts",
    "srg_pair",
    "wl_hash",
]


def _nx(A: torch.Tensor) -> nx.Graph:
    return nx.from_numpy_array(A.numpy())


def wl_hash(A: torch.Tensor, iterations: int = 4) -> str:
    """1-WL colour-refinement hash from a uniform initial colour (explicit: the attribute-free hash warns)."""
    g = _nx(A)
    nx.set_node_attributes(g, "0", "colour")
    return nx.weisfeiler_lehman_graph_hash(g, node_attr="colour", iterations=iterations)


def srg_pair(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Shrikhande and the 4x4 rook's graph, each under one random relabelling (so no check can lean on vertex order)."""
    (S1,), (R1,) = gt.relabelled_pairs(gt.shrikhande(), gt.rook_graph(), 1, generator)
    return S1, R1


def rw_collision(S: torch.Tensor, R: torch.Tensor, horizon: int) -> pd.DataFrame:
    """Per walk length t = 1..horizon: both graphs' mean return probability, the srg(16, 6, 2, 2) closed form, the
    largest spread over all 32 vertices and the largest distance of any vertex from the closed form."""
    ts, tr = gt.random_walk_tokens(S, horizon), gt.random_walk_tokens(R, horizon)  # (16, T)
    closed = tg.srg_return_probabilities(6, 2, 2, horizon)
    rows = []
    for t in range(horizon):
        both = torch.cat([ts[:, t], tr[:, t]])
        rows.append(
            dict(
                t=t + 1,
                shrikhande_mean=float(ts[:, t].mean()),
                rook_mean=float(tr[:, t].mean()),
                closed_form=float(closed[t]),
                max_pair_diff=float(both.max() - both.min()),
                max_closed_form_diff=float((both - closed[t]).abs().max()),
            )
        )
    return pd.DataFrame(rows)


def srg_facts(S: torch.Tensor, R: torch.Tensor) -> pd.DataFrame:
    """K4 count, srg parameters, spectrum and 1-WL hash of each graph; ``isomorphic`` from networkx (VF2)."""
    facts = []
    for name, A in (("shrikhande", S), ("rook", R)):
        facts.append(
            dict(
                graph=name,
                k4_count=tg.clique4_count(A),
                srg=str(tg.srg_parameters(A)),
                spectrum=str(sorted(np.round(np.linalg.eigvalsh(A.numpy()), 8).tolist())),
                wl_hash=wl_hash(A),
            )
        )
    return pd.DataFrame(facts).assign(isomorphic=nx.is_isomorphic(_nx(S), _nx(R)))


def neighbourhood_components(S: torch.Tensor, R: torch.Tensor) -> pd.DataFrame:
    """Components of G[N(i)] per vertex, with G read back from its adjacency tokens (the graph as that view holds
    it)."""
    rows = []
    for name, A in (("shrikhande", S), ("rook", R)):
        read = gt.adjacency_from_tokens(gt.tokenize(A, "adjacency"), A.shape[-1])
        comps = tg.neighbourhood_components(read)
        rows += [dict(graph=name, vertex=i, nbhd_components=int(c)) for i, c in enumerate(comps)]
    return pd.DataFrame(rows)


def spectral_reconstruction(graphs: list[tuple[str, torch.Tensor]], generator: torch.Generator) -> pd.DataFrame:
    """Largest entry error of the Laplacian rebuilt from spectral tokens (k = n, random signs and random rotations
    within each eigenspace), per graph."""
    rows = []
    for i, (name, A) in enumerate(graphs):
        tok = gt.tokenize(A, "spectral", sign="random", basis="random_rotation", generator=generator)  # (n, 2n)
        n = A.shape[-1]
        U, lam = tok[:, :n], tok[0, n:]
        err = (tg.laplacian_from_spectral(U, lam) - gt.laplacian(A)).abs().max()
        rows.append(dict(graph=name, index=i, n=n, max_error=float(err)))
    return pd.DataFrame(rows)


def basis_ambiguity(n: int, angle: float = math.pi / 4) -> pd.DataFrame:
    """The cycle C_n: rotate the first 2-dimensional eigenspace of its Laplacian by ``angle``; both bases rebuild L
    (errors), the rotated one stays orthonormal, and the spectral tokens change (``max_token_change``). The
    eigenvalue is checked against 2 - 2 cos(2π/n)."""
    C = torch.tensor(nx.to_numpy_array(nx.cycle_graph(n), nodelist=range(n)), dtype=torch.float64)
    lam, U = gt.spectral_decomposition(C)
    spaces = [s for s in tg.eigenspaces(lam) if s[1] - s[0] == 2]
    p, q = spaces[0][0], spaces[0][0] + 1  # the two columns of the first 2-dimensional eigenspace
    V = tg.rotate_eigenspace(U, (p, q), angle)
    L = gt.laplacian(C)
    before, after = gt.spectral_tokens(lam, U), gt.spectral_tokens(lam, V)
    row = dict(
        n=n,
        eigenvalue=float(lam[p]),
        expected_eigenvalue=2 - 2 * math.cos(2 * math.pi / n),
        columns=f"{p},{q}",
        angle=angle,
        error_eigh=float((tg.laplacian_from_spectral(U, lam) - L).abs().max()),
        error_rotated=float((tg.laplacian_from_spectral(V, lam) - L).abs().max()),
        orthonormal_error=float((V.T @ V - torch.eye(n, dtype=V.dtype)).abs().max()),
        max_token_change=float((after - before).abs().max()),
    )
    return pd.DataFrame([row])
