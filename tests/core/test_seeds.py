"""Claims over seeds: the Wilson interval against SciPy's, seed specs, and rates from stored runs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from theorylab.core.errors import ConfigError
from theorylab.core.runner import check_seeds
from theorylab.core.seeds import claim_rates, parse_seeds, wilson


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_is_scipys(kn):
    k, n = kn
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(ref.low, abs=1e-12) and hi == pytest.approx(ref.high, abs=1e-12)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_wilson_edges():
    assert all(math.isnan(x) for x in wilson(0, 0))
    lo, hi = wilson(5, 5)
    assert hi == 1.0 and 0.56 < lo < 0.57  # 5/5 does not prove a certain pass
    with pytest.raises(ValueError):
        wilson(6, 5)


def test_seed_specs():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("3, 0-1,3") == [3, 0, 1]
    for bad in ("a", "4-2", "-1", "1-", ""):
        with pytest.raises(ConfigError, match="'--seeds'"):
            parse_seeds(bad)


def test_rates_from_runs_at_several_seeds(store):
    outcomes = check_seeds(["toy-declared"], range(6), store=store, device="cpu")
    rates = {r.claim.split("/")[1]: r for r in claim_rates(outcomes)}
    mean, always, odd, three = (
        rates[c] for c in ("mean-zero", "always-fails", "odd-seeds-fail", "unexplained-on-seed-3")
    )
    assert (mean.rate, mean.unexplained, mean.departures) == ("6/6", [], ["n 200 (card 1000): fewer draws at quick"])
    assert (always.rate, always.unexplained, always.count("known")) == ("0/6", [], 6)
    assert odd.rate == "3/6" and odd.marks(range(6)) == "✓x✓x✓x" and not odd.unexplained
    assert three.rate == "5/6" and three.unexplained == [3] and three.first_failure.startswith("seed 3")
    lo, hi = three.interval
    assert lo < 5 / 6 < hi
    # a second call reuses every run (resumable) and gives the same rates
    again = check_seeds(["toy-declared"], range(6), store=store, device="cpu")
    assert all(o.reused for o in again.values())
    assert [r.rate for r in claim_rates(again)] == [r.rate for r in claim_rates(outcomes)]
