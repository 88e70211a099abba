"""Candidate answers through Inspect AI, and the Inspect task and scorer for Inspect users.

Importing this package does not import Inspect AI; its functions do, when called.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.generate._generate import (
        GenerationIncomplete as GenerationIncomplete,
        export_responses as export_responses,
        generate_responses as generate_responses,
        settings_for as settings_for,
    )
    from gamut_eval.generate._inspect_scorer import (
        gamut_scorer as gamut_scorer,
        mean as mean,
        scored_mean as scored_mean,
        stderr as stderr,
    )
    from gamut_eval.generate._logs import write_run_logs as write_run_logs
    from gamut_eval.generate._probe import probe_models as probe_models
    from gamut_eval.generate._scorer import (
        SCORE_KEYS as SCORE_KEYS,
        build_score_fn as build_score_fn,
    )
    from gamut_eval.generate._settings import (
        GenerationSettings as GenerationSettings,
        parse_model_args as parse_model_args,
    )
    from gamut_eval.generate._task import (
        NO_JUDGE as NO_JUDGE,
        SETTING_CHOICES as SETTING_CHOICES,
        gamut_task as gamut_task,
        record_sample as record_sample,
        samples_for as samples_for,
    )
    from gamut_eval.generate._tokens import ensure_o200k_base as ensure_o200k_base

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
