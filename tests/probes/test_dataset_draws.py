"""Monte Carlo over data-set draws against brute-force matrix functions of the same draws."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg

from theorylab.data.gaussian import wishart_sample_covariance
from theorylab.probes.dataset_draws import bilinear_denoiser_draws, chunk_sizes, draws_peak_bytes, spectral_draws

LAM = np.arange(1, 7, dtype=np.float64) ** -1.0


def test_chunk_sizes():
    assert chunk_sizes(10, 4) == [4, 4, 2] and chunk_sizes(8, 4) == [4, 4] and sum(chunk_sizes(1001, 250)) == 1001


def _covariances(n, draws, chunk, seed):
    rng = np.random.default_rng(seed)
    return np.concatenate([wishart_sample_covariance(LAM, n, size, rng).numpy() for size in chunk_sizes(draws, chunk)])


def test_spectral_draws_match_direct_matrix_functions():
    s2, sigma_T, u = np.array([1e-2, 0.3]), 5.0, np.random.default_rng(3).standard_normal((2, LAM.size))
    sim = spectral_draws(LAM, 12, 9, 4, s2, (0.0, 0.5), sigma_T, u, np.random.default_rng(7))
    covs = _covariances(12, 9, 4, 7)  # the same draws, from the same stream
    eye = np.eye(LAM.size)
    gains = np.array([[np.diag(c @ np.linalg.inv(c + s * eye)) for s in s2] for c in covs])
    np.testing.assert_allclose(sim["gain"].mean, gains.mean(0), atol=1e-10)
    np.testing.assert_allclose(sim["gain"].se, gains.std(0, ddof=1) / 3, atol=1e-10)
    roots = np.array([np.diag(scipy.linalg.sqrtm(c).real) for c in covs])
    np.testing.assert_allclose(sim["sqrt"].mean, roots.mean(0), atol=1e-8)
    for s in (0.0, 0.5):
        maps = [
            scipy.linalg.sqrtm(c + s * s * eye).real @ np.linalg.inv(scipy.linalg.sqrtm(c + sigma_T**2 * eye).real)
            for c in covs
        ]
        np.testing.assert_allclose(sim["map_mean"][s].mean, np.mean([np.diag(f) for f in maps], 0), atol=1e-8)
        np.testing.assert_allclose(sim["map_outputs"][s], np.array([u @ f.T for f in maps]), atol=1e-8)


def test_bilinear_draws_match_a_direct_solve():
    v, x = np.random.default_rng(4).standard_normal((2, 3, LAM.size))
    values = bilinear_denoiser_draws(LAM, 10, 7, 3, 0.05, v, x, np.random.default_rng(5))
    covs = _covariances(10, 7, 3, 5)
    eye = np.eye(LAM.size)
    direct = np.array(
        [v @ (c @ np.linalg.inv(c + 0.05 * eye)) @ x.T for c in covs]
    )  # v^T D(x), D = Sigma_hat (Sigma_hat + s2)^-1
    assert values.shape == (7, 3, 3)
    np.testing.assert_allclose(values, direct, atol=1e-10)


_PEAK = """
import sys
import numpy as np, torch
torch.set_num_threads(1)
from theorylab.probes.dataset_draws import bilinear_denoiser_draws, spectral_draws
d, n, chunk, draws = map(int, sys.argv[1:5])
which = sys.argv[5]
lam, rng = np.arange(1, d + 1) ** -1.0, np.random.default_rng(0)
v = rng.standard_normal((8, d))

def status(key):  # kB
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))

with open("/proc/self/clear_refs", "w") as f:  # reset the peak (VmHWM) so import-time peaks do not count
    f.write("5")
before = status("VmRSS")
if which == "spectral":
    spectral_draws(lam, n, draws, chunk, np.array([1e-3, 1e-2]), (0.0, 0.5), 80.0, v, rng)
else:
    bilinear_denoiser_draws(lam, n, draws, chunk, 1e-2, v, v, rng)
print((status("VmHWM") - before) * 1024)
"""


def _peak_bytes(d: int, n: int, chunk: int, draws: int, which: str) -> float:
    """Peak resident memory added by one call, measured in a fresh interpreter (Linux: the peak VmHWM, reset after
    the imports, over the resident size before the call)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the suite's PYTHONPATH imports the test kit
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(d), str(n), str(chunk), str(draws), which],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.split()[-1])


@pytest.mark.parametrize(("which", "n"), [("spectral", 256), ("spectral", 1024)])
def test_draws_peak_bytes_bounds_the_measured_peak(which, n):
    """The estimate that rmt-diffusion's memory check relies on bounds the measured peak of the larger of the two
    functions over two chunks (so a chunk is released before the next is drawn: held, they measured 7.2 x B d^2 x 8
    bytes against the estimate's 4.5 x), below and above n = d, and is not a loose bound (within 2x)."""
    d, chunk = 512, 80
    measured = _peak_bytes(d, n, chunk, 2 * chunk, which)
    estimate = draws_peak_bytes(d, n, chunk)
    assert measured <= estimate <= 2 * measured, (measured / 2**20, estimate / 2**20)
