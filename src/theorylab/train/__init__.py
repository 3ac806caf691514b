"""Training and evaluation loops shared by studies, batched over seeds.

The package-level names below are the curated surface (the pieces more than one study uses), loaded on
first use, so ``import theorylab.train`` stays light; every module stays importable on its own.

- Many models as one computation: ``batched`` (AdamWSchedule, StackedModels, TrainLog, evaluate_stacked,
  train_stacked)
- Language models: ``language`` (train_language_model, lm_loss)
- Emulator rollouts: ``rollout`` (Rollout, rollout_pipelined, Thermalize, noisy_emulator, float32_denoiser);
  ``surrogate`` (SurrogateData, surrogate_data)
- Diffusion and transport: ``edm`` (train_edm, edm_samples); ``interpolants`` (transport, train_self_consistent)
- Mean-field networks: ``mean_field`` (width_sweep, checkpoint_steps)
"""

from __future__ import annotations

from theorylab.core.lazy import lazy_attributes

_WHERE = {
    "AdamWSchedule": "theorylab.train.batched",
    "StackedModels": "theorylab.train.batched",
    "TrainLog": "theorylab.train.batched",
    "evaluate_stacked": "theorylab.train.batched",
    "train_stacked": "theorylab.train.batched",
    "train_language_model": "theorylab.train.language",
    "lm_loss": "theorylab.train.language",
    "Rollout": "theorylab.train.rollout",
    "rollout_pipelined": "theorylab.train.rollout",
    "Thermalize": "theorylab.train.rollout",
    "noisy_emulator": "theorylab.train.rollout",
    "float32_denoiser": "theorylab.train.rollout",
    "SurrogateData": "theorylab.train.surrogate",
    "surrogate_data": "theorylab.train.surrogate",
    "train_edm": "theorylab.train.edm",
    "edm_samples": "theorylab.train.edm",
    "transport": "theorylab.train.interpolants",
    "train_self_consistent": "theorylab.train.interpolants",
    "width_sweep": "theorylab.train.mean_field",
    "checkpoint_steps": "theorylab.train.mean_field",
}


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
__all__ = sorted(_WHERE)
