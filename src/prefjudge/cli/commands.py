"""Imports every command module so each registers itself on the ``main`` group."""

from prefjudge.cli import (  # noqa: F401
    augment_cmd,
    cache_cmd,
    correlate_cmd,
    generate_cmd,
    guidance_cmd,
    instructions_cmd,
    judge_cmd,
    models_cmd,
    persona_cmd,
    rank_cmd,
    report_cmd,
    score_cmd,
)
