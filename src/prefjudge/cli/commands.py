"""Which module defines each command: commands register themselves on ``main`` when imported.

The group imports a command's module only when that command runs (or when all are listed),
so one command's start-up does not pay for every other command's dependencies.
"""

from __future__ import annotations

import importlib

COMMAND_MODULES: dict[str, str] = {
    "augment": "augment_cmd",
    "cache": "cache_cmd",
    "correlate": "correlate_cmd",
    "generate": "generate_cmd",
    "guidance": "guidance_cmd",
    "instructions": "instructions_cmd",
    "judge": "judge_cmd",
    "judge-eval": "judge_cmd",
    "models": "models_cmd",
    "pair": "judge_cmd",
    "persona": "persona_cmd",
    "rank": "rank_cmd",
    "report": "report_cmd",
    "run": "run_cmd",
    "score": "score_cmd",
    "view": "view_cmd",
}

COMMAND_SUMMARIES: dict[str, str] = {
    "augment": "Choose k relevant, non-conflicting instructions with parameters for each task.",
    "cache": "Show and clear the response cache (valid model replies, keyed by request).",
    "correlate": "Which blend of functional correctness and IF best predicts Elo "
                 "(Vibe Checker §4.5).",
    "generate": "Ask a model for every task of AUGMENTED (augmented-task JSONL) under each "
                "protocol.",
    "guidance": "HPAG guidance: lessons mined from where a judge disagrees with humans.",
    "instructions": "List the 30 verifiable code instructions with their parameters and "
                    "verifiers.",
    "judge": "Judge many pairs.",
    "judge-eval": "Measure judges against human labels, side by side per method.",
    "models": "Serve a model, check model backends, prepare the embedded model.",
    "pair": "Judge which of two responses a user would prefer.",
    "persona": "Personas (vibe-testing): rewrite prompts in a user's voice, judge as that user.",
    "rank": "Bradley–Terry leaderboard of BATTLES (CSV/JSON/JSONL, or - for stdin) with "
            "bootstrap intervals.",
    "report": "Write a report of SCORES (scored JSONL from ``prefjudge score``, or - for stdin).",
    "run": "Run EXPERIMENT (a TOML file): augment → generate → score → judge → rank → report.",
    "score": "Score GENERATIONS (JSONL, or - for stdin): instruction checks and sandboxed unit "
             "tests.",
    "view": "Look at RESULTS in one HTML page: a results folder, or one results file.",
}
"""The first paragraph of each command's help, what ``prefjudge --help`` lists, so that the
listing imports no command module (``tests/cli/test_cli_startup.py`` holds it equal to
each command's own help)."""

RESUMABLE_COMMANDS: frozenset[str] = frozenset(
    {"augment", "generate", "judge", "judge-eval", "persona", "run", "score"}
)
"""The commands that journal each record as it is made: rerun after an interrupt resumes."""


def load_command(name: str) -> None:
    """Import the module that defines command ``name`` (nothing for an unknown name)."""
    module = COMMAND_MODULES.get(name)
    if module is not None:
        importlib.import_module(f"prefjudge.cli.{module}")


def load_all() -> None:
    """Import every command module (for tools that walk the whole command tree)."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"prefjudge.cli.{module}")
