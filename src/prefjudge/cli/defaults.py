"""The names and defaults that ``--help`` shows, as plain constants that cost nothing to import.

A command's options are built when its module is imported, and ``prefjudge CMD --help``
prints their choices and defaults; the stage modules that own these values import pydantic,
numpy or pandas, so ``--help`` would pay for them. Each constant here names the value it
copies, and ``tests/cli/test_help_imports.py`` holds every copy equal to its source, so a
change there fails a test instead of showing a stale default.

When a stage publishes its names and defaults from a light module of its own (a registry's
names, a ``defaults`` module without pydantic), the copy here becomes a re-export: the
backend kinds (:mod:`prefjudge.backends.registry`, a live view of the registry), the
backend configuration's and the model server's defaults and the file name
(:mod:`prefjudge.backends.defaults`), the judging methods and the judge's sampling
defaults (:mod:`prefjudge.judge`, whose package imports its method registry alone), the
pair formats (:mod:`prefjudge.judge.pairs.formats.registry`, a live view of the registry,
whose built-in formats are registered by name only) and the tie policies
(:mod:`prefjudge.ranking.ties`) are such re-exports.
"""

from __future__ import annotations

from typing import Any

from prefjudge.backends.defaults import BACKEND_DEFAULTS as BACKEND_DEFAULTS
from prefjudge.backends.defaults import CONFIG_NAME as CONFIG_NAME
from prefjudge.backends.defaults import SERVE_DEFAULTS as SERVE_DEFAULTS
from prefjudge.backends.registry import BACKEND_KINDS as BACKEND_KINDS
from prefjudge.ranking.ties import DEFAULT_TIES as DEFAULT_TIES
from prefjudge.ranking.ties import TIE_POLICIES as TIE_POLICIES


def __getattr__(name: str) -> Any:
    """The judge's names and defaults, read from their owners when first asked for.

    ``JUDGE_METHODS`` is ``sorted(prefjudge.judge.METHODS)`` and ``MODEL_METHODS`` is
    ``prefjudge.judge.MODEL_METHODS`` (the methods that ask a model), both as registered
    when first asked for (the judging commands' options, when their module is imported);
    ``JUDGE_SAMPLING`` is ``prefjudge.judge.JUDGE_SAMPLING`` (also
    ``prefjudge.judge.settings``'), and ``PAIR_FORMATS`` the pair-format registry's live
    :data:`~prefjudge.judge.pairs.formats.registry.PAIR_FORMATS`. The judge is imported
    then and not before, so a command that judges nothing (``score --help``) imports no part
    of it; the methods and the pair formats are listed without importing any of their code
    (:mod:`prefjudge.judge.methods_builtin`, :mod:`prefjudge.judge.pairs.formats.builtin`).
    """
    if name in ("JUDGE_METHODS", "MODEL_METHODS", "JUDGE_SAMPLING"):
        from prefjudge import judge

        if name == "JUDGE_SAMPLING":
            value: Any = judge.JUDGE_SAMPLING
        else:
            value = tuple(sorted(judge.METHODS) if name == "JUDGE_METHODS" else judge.MODEL_METHODS)
    elif name == "PAIR_FORMATS":
        from prefjudge.judge.pairs.formats.registry import PAIR_FORMATS as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


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
