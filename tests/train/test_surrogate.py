"""train.surrogate: the truth trajectories the thermalizer and SNS studies train and test their emulators on."""

import pytest
import torch

from theorylab.data.pde import NS2D, coarse_trajectories
from theorylab.data.qg import QG2L
from theorylab.train.surrogate import surrogate_data

SIZES = dict(spinup=30, horizon=3, substeps=2, store_n=8)


def _kolmogorov(n: int) -> tuple[NS2D, torch.Tensor]:
    solver = NS2D(N=16, nu=1e-2, dt=5e-3)
    return solver, solver.random_state(n, torch.Generator().manual_seed(0))


def test_training_trajectories_have_unit_std_and_every_field_shares_their_scale():
    solver, w0 = _kolmogorov(5)
    data = surrogate_data(solver, w0, n_train=3, test_truth=True, **SIZES)
    assert data.train.shape == (3, 4, 1, 8, 8) and data.test.shape == (2, 4, 1, 8, 8)
    assert float(data.train.std()) == pytest.approx(1.0, rel=1e-5)
    # the same trajectories as the solver's kit gives, all divided by the training std
    raw, _ = coarse_trajectories(solver, w0, 5, SIZES["spinup"], 3, 2, 8)
    std = raw[:3].std()
    torch.testing.assert_close(data.std, std)
    torch.testing.assert_close(data.train, raw[:3] / std)
    torch.testing.assert_close(data.test, raw[3:] / std)
    torch.testing.assert_close(data.test_init, (raw[3:, 0] / std).double())


def test_test_rollouts_start_from_the_same_states_with_or_without_their_truth():
    solver, w0 = _kolmogorov(5)
    with_truth = surrogate_data(solver, w0, n_train=3, test_truth=True, **SIZES)
    without = surrogate_data(solver, w0, n_train=3, test_truth=False, **SIZES)
    assert without.test.shape[0] == 0 and without.test_init.dtype == torch.float64
    torch.testing.assert_close(without.train, with_truth.train)
    # the truth is stored in float32: the initial states agree to its rounding
    torch.testing.assert_close(without.test_init, with_truth.test_init, rtol=1e-6, atol=1e-6)


def test_per_channel_std_normalises_each_layer_of_the_qg_jet():
    solver = QG2L.preset("jet", N=16, dt=3600.0)
    w0 = solver.random_state(3, torch.Generator().manual_seed(1), velocity=1e-3)
    data = surrogate_data(solver, w0, n_train=2, test_truth=False, per_channel_std=True, label="QG jet", **SIZES)
    assert data.std.shape == (1, 1, 2, 1, 1)
    per_layer = data.train.transpose(0, 2).reshape(2, -1).std(dim=1)
    torch.testing.assert_close(per_layer, torch.ones(2), rtol=1e-5, atol=1e-5)
    assert data.test_init.shape == (1, 2, 8, 8)


@pytest.mark.parametrize("n_train", [0, 5])
def test_a_split_without_training_or_test_trajectories_is_refused(n_train):
    solver, w0 = _kolmogorov(5)
    with pytest.raises(ValueError, match="0 < n_train < len"):
        surrogate_data(solver, w0, n_train=n_train, test_truth=True, **SIZES)
