"""Predictions: closed forms, fixed points, quadratures and ODEs. Pure functions of numbers.

The package-level names below are the curated surface (the pieces more than one study uses), loaded on
first use, so ``import theorylab.theory`` stays light; every module stays importable on its own.

- Hermite analysis: ``hermite`` (hermite_all, gauss_hermite, gauss_hermite_nd, hermite_coefficients,
  information_exponent, generative_exponent)
- Random matrices and linear diffusion: ``rmt`` (solve_kappa, denoiser_mean_equiv, denoiser_var_equiv)
- Rates and exponents read off curves: ``rates`` (fit_power_law, fit_inverse_width, loglog_slopes, first_crossing);
  ``sample_complexity`` (fitted_exponent, crossings_from_table)
- Extreme values: ``extremes`` (expected_max_normal, sd_max_normal)
- Markov chains: ``markov`` (stationary, entropy_rate, correlation_length)
- Attention geometry: ``bilinear`` (split_sym_skew, symmetry_score, directionality_score, rotation_content, inertia,
  balanced_factorization); ``diffusion_maps`` (gaussian_kernel, attention_operator, random_walk, magnetic_laplacian,
  entropy_production); ``softmax`` (jacobian, theta_exact)
- Index models: ``sdr`` (SIR, SAVE, label_slices)
- Reference algorithms: ``algorithms`` (bellman_ford, msf_weight)
- Mean-field networks: ``mean_field`` (uniform_sphere, projected_step)
- ODEs: ``ode`` (integrate); ``order_ode`` (run_order_ode)
"""

from __future__ import annotations

from theorylab.core.lazy import lazy_attributes

_WHERE = {
    "hermite_all": "theorylab.theory.hermite",
    "gauss_hermite": "theorylab.theory.hermite",
    "gauss_hermite_nd": "theorylab.theory.hermite",
    "hermite_coefficients": "theorylab.theory.hermite",
    "information_exponent": "theorylab.theory.hermite",
    "generative_exponent": "theorylab.theory.hermite",
    "solve_kappa": "theorylab.theory.rmt",
    "denoiser_mean_equiv": "theorylab.theory.rmt",
    "denoiser_var_equiv": "theorylab.theory.rmt",
    "fit_power_law": "theorylab.theory.rates",
    "fit_inverse_width": "theorylab.theory.rates",
    "loglog_slopes": "theorylab.theory.rates",
    "first_crossing": "theorylab.theory.rates",
    "fitted_exponent": "theorylab.theory.sample_complexity",
    "crossings_from_table": "theorylab.theory.sample_complexity",
    "expected_max_normal": "theorylab.theory.extremes",
    "sd_max_normal": "theorylab.theory.extremes",
    "stationary": "theorylab.theory.markov",
    "entropy_rate": "theorylab.theory.markov",
    "correlation_length": "theorylab.theory.markov",
    "split_sym_skew": "theorylab.theory.bilinear",
    "symmetry_score": "theorylab.theory.bilinear",
    "directionality_score": "theorylab.theory.bilinear",
    "rotation_content": "theorylab.theory.bilinear",
    "inertia": "theorylab.theory.bilinear",
    "balanced_factorization": "theorylab.theory.bilinear",
    "gaussian_kernel": "theorylab.theory.diffusion_maps",
    "attention_operator": "theorylab.theory.diffusion_maps",
    "random_walk": "theorylab.theory.diffusion_maps",
    "magnetic_laplacian": "theorylab.theory.diffusion_maps",
    "entropy_production": "theorylab.theory.diffusion_maps",
    "jacobian": "theorylab.theory.softmax",
    "theta_exact": "theorylab.theory.softmax",
    "SIR": "theorylab.theory.sdr",
    "SAVE": "theorylab.theory.sdr",
    "label_slices": "theorylab.theory.sdr",
    "bellman_ford": "theorylab.theory.algorithms",
    "msf_weight": "theorylab.theory.algorithms",
    "uniform_sphere": "theorylab.theory.mean_field",
    "projected_step": "theorylab.theory.mean_field",
    "integrate": "theorylab.theory.ode",
    "run_order_ode": "theorylab.theory.order_ode",
}


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
__all__ = sorted(_WHERE)
