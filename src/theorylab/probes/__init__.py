"""Measurements on models, samples and activations; they return numbers.

The package-level names below are the curated surface (the pieces more than one study uses), loaded on
first use, so ``import theorylab.probes`` stays light; every module stays importable on its own.

- Spectra and ranks: ``spectra`` (stable_rank, effective_rank, participation_ratio, gram_spectrum)
- Subspaces: ``subspace`` (principal_angles, overlap, captures)
- Representation similarity: ``similarity`` (linear_cka, rbf_cka, rsa, procrustes_distance, gaussian_w2,
  gaussian_w2_from_samples, stochastic_shape_distance)
- Distances between sample sets: ``distances`` (sliced_w2, paired_mse, nearest_mse)
- Attention: ``attention_stats`` (attention_entropy); ``bilinear_operators`` (head_operators)
- Monte Carlo estimators: ``estimators`` (RunningMoments, variance_with_se, slope_through_origin)
- Training curves: ``stages`` (detect_plateaus, moving_average, zigzag)
- Local geometry: ``hessian`` (gradient)
- Edits and interventions: ``ablation`` (low_rank); ``weight_patches`` (patched_greedy, chain_patches)
- Emulator rollouts: ``rollout_metrics`` (spectrum_1d, ke_spectrum_2d, pearson_t, corr_time, off_attractor_time,
  spectral_similarity, censored_median_bounds)
"""

from __future__ import annotations

from theorylab.core.lazy import lazy_attributes

_WHERE = {
    "stable_rank": "theorylab.probes.spectra",
    "effective_rank": "theorylab.probes.spectra",
    "participation_ratio": "theorylab.probes.spectra",
    "gram_spectrum": "theorylab.probes.spectra",
    "principal_angles": "theorylab.probes.subspace",
    "overlap": "theorylab.probes.subspace",
    "captures": "theorylab.probes.subspace",
    "linear_cka": "theorylab.probes.similarity",
    "rbf_cka": "theorylab.probes.similarity",
    "rsa": "theorylab.probes.similarity",
    "procrustes_distance": "theorylab.probes.similarity",
    "gaussian_w2": "theorylab.probes.similarity",
    "gaussian_w2_from_samples": "theorylab.probes.similarity",
    "stochastic_shape_distance": "theorylab.probes.similarity",
    "sliced_w2": "theorylab.probes.distances",
    "paired_mse": "theorylab.probes.distances",
    "nearest_mse": "theorylab.probes.distances",
    "attention_entropy": "theorylab.probes.attention_stats",
    "head_operators": "theorylab.probes.bilinear_operators",
    "RunningMoments": "theorylab.probes.estimators",
    "variance_with_se": "theorylab.probes.estimators",
    "slope_through_origin": "theorylab.probes.estimators",
    "detect_plateaus": "theorylab.probes.stages",
    "moving_average": "theorylab.probes.stages",
    "zigzag": "theorylab.probes.stages",
    "gradient": "theorylab.probes.hessian",
    "low_rank": "theorylab.probes.ablation",
    "patched_greedy": "theorylab.probes.weight_patches",
    "chain_patches": "theorylab.probes.weight_patches",
    "spectrum_1d": "theorylab.probes.rollout_metrics",
    "ke_spectrum_2d": "theorylab.probes.rollout_metrics",
    "pearson_t": "theorylab.probes.rollout_metrics",
    "corr_time": "theorylab.probes.rollout_metrics",
    "off_attractor_time": "theorylab.probes.rollout_metrics",
    "spectral_similarity": "theorylab.probes.rollout_metrics",
    "censored_median_bounds": "theorylab.probes.rollout_metrics",
}


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
__all__ = sorted(_WHERE)
