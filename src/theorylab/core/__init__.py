"""The study contract and the machinery around it; knows nothing about any paper."""

from theorylab.core.claims import Claims, Judgement
from theorylab.core.config import ConfigError, Preset, StudyConfig
from theorylab.core.context import Diverged, RunContext
from theorylab.core.result import Result
from theorylab.core.store import Store
from theorylab.core.study import Claim, Study, Verdict, all_studies, get_study, study

__all__ = [
    "Claim",
    "Claims",
    "ConfigError",
    "Diverged",
    "Judgement",
    "Preset",
    "Result",
    "RunContext",
    "Store",
    "Study",
    "StudyConfig",
    "Verdict",
    "all_studies",
    "get_study",
    "study",
]
