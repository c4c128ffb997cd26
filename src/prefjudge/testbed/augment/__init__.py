"""Augment tasks with k verifiable instructions (``prefjudge augment``): the public API.

Both selectors scan a seeded random permutation of the taxonomy's 30 instructions once per
task and keep instructions that fit the task and do not conflict with those already kept,
until k; which tasks an instruction fits is data, each instruction's ``applies_when`` in
``rubrics/vericode.yaml``. One job per module:

* :mod:`.facts` — what is read from a task's reference solution, libs and prompt;
* :mod:`.selection` — the per-task scan order and the selection both selectors build;
* :mod:`.rule` — the rule selector (no model);
* :mod:`.llm` — the LLM selector and the repair of its answer;
* :mod:`.summary` — category distribution and invalid-parameter rate of a run.
* :mod:`.run` — the stage's use case, :func:`~.run.augment_file` (a source to a journal).
"""

from prefjudge.scoring.applicability import TaskFacts
from prefjudge.testbed.augment.facts import LIMIT_PARAMS, function_metrics, task_facts
from prefjudge.testbed.augment.llm import (
    ParamValue,
    SelectedInstruction,
    SelectorReply,
    parse_selection,
    select_llm,
    selector_prompt,
    selector_request,
)
from prefjudge.testbed.augment.rule import (
    applicable,
    rule_params,
    rule_scan,
    select_rule,
    tightened_limit,
)
from prefjudge.testbed.augment.selection import Selection, augmented_task, scan_order
from prefjudge.testbed.augment.summary import dumps_summary, summarize

__all__ = [
    "LIMIT_PARAMS",
    "ParamValue",
    "SelectedInstruction",
    "Selection",
    "SelectorReply",
    "TaskFacts",
    "applicable",
    "augmented_task",
    "dumps_summary",
    "function_metrics",
    "parse_selection",
    "rule_params",
    "rule_scan",
    "scan_order",
    "select_llm",
    "select_rule",
    "selector_prompt",
    "selector_request",
    "summarize",
    "task_facts",
    "tightened_limit",
]
