"""Candidate answers through Inspect AI, and the Inspect task and scorer for Inspect users.

Importing this package does not import Inspect AI; its functions do, when called.
"""

from gamut_eval.generate._generate import (
    GenerationIncomplete,
    export_responses,
    generate_responses,
    settings_for,
)
from gamut_eval.generate._samples import record_sample, samples_for
from gamut_eval.generate._scorer import SCORE_KEYS, build_score_fn
from gamut_eval.generate._task import SETTING_CHOICES, gamut_task

__all__ = [
    "SCORE_KEYS",
    "SETTING_CHOICES",
    "GenerationIncomplete",
    "build_score_fn",
    "export_responses",
    "gamut_task",
    "generate_responses",
    "record_sample",
    "samples_for",
    "settings_for",
]
