"""theory.truth_bayes: closed forms vs exact enumeration of the generator and vs Monte Carlo."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from theorylab.data.truth_cooccurrence import truth_bijection, truth_cooccurrence
from theorylab.theory.truth_bayes import bayes_y2_logprob, h_n, truth_bayes


def _enumerate(n: int, rho: float) -> tuple[float, float]:
    """Exact Bayes and memorise-only y'-losses by summing the generator's joint law over every (x, y, x', y')."""
    g = list(range(n))  # WLOG g = identity: the losses do not depend on the bijection
    joint = {}
    for x, y, x2, y2 in itertools.product(range(n), repeat=4):
        p_true = rho * (y == g[x]) * (y2 == g[x2])
        p_false = (1 - rho) / n**2
        joint[(x, y, x2, y2)] = (p_true + p_false) / n**2
    bayes = mem = 0.0
    for x, y, x2 in itertools.product(range(n), repeat=3):
        ctx = [joint[(x, y, x2, v)] for v in range(n)]
        z = sum(ctx)
        for v in range(n):
            if ctx[v] > 0:
                bayes -= ctx[v] * math.log(ctx[v] / z)
                f_t = rho + (1 - rho) / n  # memorise-only: f_T on g(x'), the rest uniform, whatever (x, y)
                mem -= ctx[v] * math.log(f_t if v == g[x2] else (1 - f_t) / (n - 1))
    return bayes, mem


@pytest.mark.parametrize("n, rho", [(2, 0.5), (3, 0.9), (4, 0.3)])
def test_closed_forms_match_enumeration(n, rho):
    th = truth_bayes(n, rho)
    bayes, mem = _enumerate(n, rho)
    assert th.loss_bayes == pytest.approx(bayes, abs=1e-12)
    assert th.loss_mem == pytest.approx(mem, abs=1e-12)
    assert th.loss_bayes <= th.loss_mem


def test_card_values_and_h():
    th = truth_bayes(64, 0.9)
    assert th.pi == pytest.approx(0.9 / (0.9 + 0.1 / 64)) and th.f_true == pytest.approx(0.9 + 0.1 / 64)
    assert th.gap == pytest.approx(0.30, abs=0.01)  # the card's ~0.30 nats
    assert h_n(1 / 8, 8) == pytest.approx(math.log(8))  # uniform prediction: ln N
    assert h_n(1.0, 8) == 0.0
    with pytest.raises(ValueError, match="rho"):
        truth_bayes(8, 1.2)


def test_monte_carlo_predictor_matches_closed_forms():
    n, rho = 32, 0.8
    gen = torch.Generator().manual_seed(0)
    g = truth_bijection(n, gen)
    batch = truth_cooccurrence(n, rho, 400_000, g, gen)
    th = truth_bayes(n, rho)
    for aware, ref in ((True, th.loss_bayes), (False, th.loss_mem)):
        nll = -bayes_y2_logprob(batch.tokens, g, rho, truth_aware=aware)
        assert abs(nll.mean().item() - ref) < 4 * nll.std().item() / math.sqrt(len(nll))
