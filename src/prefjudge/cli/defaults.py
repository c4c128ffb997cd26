"""The names and defaults that ``--help`` shows, as plain constants that cost nothing to import.

A command's options are built when its module is imported, and ``prefjudge CMD --help``
prints their choices and defaults; the stage modules that own these values import pydantic,
numpy or pandas, so ``--help`` would pay for them. Each constant here names the value it
copies, and ``tests/cli/test_help_imports.py`` holds every copy equal to its source, so a
change there fails a test instead of showing a stale default.

When a stage publishes its names and defaults from a light module of its own (a registry's
names, a ``defaults`` module without pydantic), the copy here becomes a re-export: the
backend kinds (:mod:`prefjudge.backends.registry`, a live view of the registry), the
backend configuration's defaults and file name (:mod:`prefjudge.backends.defaults`) and
the tie policies (:mod:`prefjudge.ranking.ties`) are such re-exports.
"""

from __future__ import annotations

from typing import Any

from prefjudge.backends.defaults import BACKEND_DEFAULTS as BACKEND_DEFAULTS
from prefjudge.backends.defaults import CONFIG_NAME as CONFIG_NAME
from prefjudge.backends.registry import BACKEND_KINDS as BACKEND_KINDS
from prefjudge.ranking.ties import DEFAULT_TIES as DEFAULT_TIES
from prefjudge.ranking.ties import TIE_POLICIES as TIE_POLICIES

JUDGE_METHODS: tuple[str, ...] = ("criteralign", "evidence", "hybrid", "monolithic", "pointwise")
"""``sorted(prefjudge.judge.METHODS)``."""

MODEL_METHODS: tuple[str, ...] = ("criteralign", "monolithic", "pointwise")
"""``prefjudge.judge.MODEL_METHODS`` (the methods that ask a model)."""

PAIR_FORMATS: tuple[str, ...] = ("prefjudge", "codeprefbench", "copilot_arena", "bigcodereward")
"""``prefjudge.judge.pairs.PAIR_FORMATS``, in its order."""

JUDGE_SAMPLING: dict[str, Any] = {"max_tokens": 2048, "seed": 0}
"""``prefjudge.judge.settings.JUDGE_SAMPLING``."""

DEFAULT_RESAMPLES = 1000
"""``prefjudge.stats.DEFAULT_RESAMPLES`` (also re-exported by scoring.metrics and
persona.flips)."""

JUDGE_SHARD_SIZE = 25
"""``prefjudge.scale.ray_engine.JUDGE_SHARD_SIZE``."""

RAY_DEFAULTS: dict[str, Any] = {"address": "auto", "shard_size": 200, "cpus_per_shard": 1}
"""The defaults of ``prefjudge.scale.ray_engine.RaySettings`` the engine flags show."""

SELECTOR_SAMPLING: dict[str, Any] = {"max_tokens": 512, "seed": 0}
"""``prefjudge.testbed.augment.run.SELECTOR_SAMPLING``."""

FRAMINGS: tuple[str, ...] = ("reference", "numbered")
"""``prefjudge.testbed.protocols.FRAMINGS``."""

SERVE_DEFAULTS: dict[str, Any] = {
    "host": "127.0.0.1",
    "port": 8000,
    "max_model_len": 4096,
    "embedded_name": "smollm2",
}
"""``prefjudge.backends.serve``'s ``DEFAULT_HOST``, ``DEFAULT_PORT``,
``DEFAULT_MAX_MODEL_LEN`` and ``EMBEDDED_SERVED_NAME``."""

PERSONA_SAMPLING: dict[str, dict[str, Any]] = {
    "profile": {"max_tokens": 1536, "seed": 0},
    "rewrite": {"max_tokens": 1024, "seed": 0},
    "compare": {"max_tokens": 1536, "seed": 0},
}
"""``prefjudge.persona.run``'s ``PROFILE_SAMPLING``, ``REWRITE_SAMPLING`` and
``COMPARE_SAMPLING``."""

HARNESS_HELP = (
    "the task format's own harness: 240 s (CPU and wall) and 30 GiB for BigCodeBench, as "
    "bigcodebench.evaluate; 60 s and 4 GiB otherwise (HumanEval+/MBPP+ inputs get max(1 s, "
    "4x the reference's CPU time), as evalplus.evaluate)"
)
"""``prefjudge.sandbox.limits.HARNESS_HELP``."""

VIEW_MAX_CHARS = 20000
"""``prefjudge.view.DEFAULT_MAX_CHARS``."""

INSTRUCTION_CATEGORIES: tuple[str, ...] = (
    "style", "logic", "documentation", "error_handling", "library"
)
"""``prefjudge.scoring.taxonomy.CATEGORIES``."""

RATING_BASE = 1000.0
"""``prefjudge.ranking.bradley_terry.DEFAULT_BASE``."""

STYLE_CONTROLS: tuple[str, ...] = ("length", "markdown", "style")
"""``list(prefjudge.ranking.style.CONTROLS)``."""

STYLE_PENALTIES: tuple[str, ...] = ("l2", "none")
"""``prefjudge.ranking.style.PENALTIES``."""

STYLE_PENALTY = "l2"
"""``prefjudge.ranking.style.DEFAULT_PENALTY``."""

ANCHOR_FORMULA = "rating = R + 400/ln(10) * (theta - theta_M)"
"""``prefjudge.ranking.reports.ANCHOR_FORMULA``."""

ELO_FORMULA = "rating = BASE + 400/ln(10) * (theta - mean(theta))"
"""``prefjudge.ranking.reports.ELO_FORMULA``."""
