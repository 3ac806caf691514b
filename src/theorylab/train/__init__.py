"""Training and evaluation loops shared by studies, batched over seeds."""

from theorylab.train.batched import AdamWSchedule, StackedModels, TrainLog, evaluate_stacked, train_stacked

__all__ = ["AdamWSchedule", "StackedModels", "TrainLog", "evaluate_stacked", "train_stacked"]
