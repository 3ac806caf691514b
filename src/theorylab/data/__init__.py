"""Task generators and data sets. Every generator takes an explicit generator/seed and a size.

The package-level names below are the curated surface (the pieces more than one study uses), loaded on
first use, so ``import theorylab.data`` stays light; every module stays importable on its own.

- Gaussian data and index models: ``gaussian`` (PowerLawGaussian, wishart_sample_covariance); ``index_models``
  (IndexModel, Link, get_link)
- Images: ``digits`` (disjoint_splits, stratify_by_pc, ImageSet); ``images`` (ImageFolderArray)
- Text: ``text`` (check_corpus, resolve_corpus, char_stream, word_stream, random_windows, CharVocab, WordVocab,
  TriggerWordTask)
- Token tasks: ``markov`` (TriggerBatch, TriggerNoiseTask, sample_chain, mask_tokens); ``tasks``
  (in_context_linear_regression, associative_recall)
- Geometry: ``manifolds`` (circle, swiss_roll, sphere, gaussian_points); ``nearest_points`` (nearest_point_sets,
  d_mse)
- Graphs: ``graphs`` (WeightedGraph, erdos_renyi_weighted, knapsack_graph, KnapsackInstance)
- Corruptions: ``corruptions`` (Channel, GaussianNoise, RandomMask)
- PDEs: ``pde`` (KS1D, KSLeaky, NS2D, etdrk4_step, ks22_trajectories, coarse_trajectories, closure_target); ``qg``
  (QG2L)
"""

from __future__ import annotations

from theorylab.core.lazy import lazy_attributes

_WHERE = {
    "PowerLawGaussian": "theorylab.data.gaussian",
    "wishart_sample_covariance": "theorylab.data.gaussian",
    "IndexModel": "theorylab.data.index_models",
    "Link": "theorylab.data.index_models",
    "get_link": "theorylab.data.index_models",
    "disjoint_splits": "theorylab.data.digits",
    "stratify_by_pc": "theorylab.data.digits",
    "ImageSet": "theorylab.data.digits",
    "ImageFolderArray": "theorylab.data.images",
    "check_corpus": "theorylab.data.text",
    "resolve_corpus": "theorylab.data.text",
    "char_stream": "theorylab.data.text",
    "word_stream": "theorylab.data.text",
    "random_windows": "theorylab.data.text",
    "CharVocab": "theorylab.data.text",
    "WordVocab": "theorylab.data.text",
    "TriggerWordTask": "theorylab.data.text",
    "TriggerBatch": "theorylab.data.markov",
    "TriggerNoiseTask": "theorylab.data.markov",
    "sample_chain": "theorylab.data.markov",
    "mask_tokens": "theorylab.data.markov",
    "in_context_linear_regression": "theorylab.data.tasks",
    "associative_recall": "theorylab.data.tasks",
    "circle": "theorylab.data.manifolds",
    "swiss_roll": "theorylab.data.manifolds",
    "sphere": "theorylab.data.manifolds",
    "gaussian_points": "theorylab.data.manifolds",
    "nearest_point_sets": "theorylab.data.nearest_points",
    "d_mse": "theorylab.data.nearest_points",
    "WeightedGraph": "theorylab.data.graphs",
    "erdos_renyi_weighted": "theorylab.data.graphs",
    "knapsack_graph": "theorylab.data.graphs",
    "KnapsackInstance": "theorylab.data.graphs",
    "Channel": "theorylab.data.corruptions",
    "GaussianNoise": "theorylab.data.corruptions",
    "RandomMask": "theorylab.data.corruptions",
    "KS1D": "theorylab.data.pde",
    "KSLeaky": "theorylab.data.pde",
    "NS2D": "theorylab.data.pde",
    "etdrk4_step": "theorylab.data.pde",
    "ks22_trajectories": "theorylab.data.pde",
    "coarse_trajectories": "theorylab.data.pde",
    "closure_target": "theorylab.data.pde",
    "QG2L": "theorylab.data.qg",
}


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
__all__ = sorted(_WHERE)
