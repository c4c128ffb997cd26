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
