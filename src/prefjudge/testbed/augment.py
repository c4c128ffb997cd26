"""Augment tasks with k verifiable instructions: the rule and LLM selectors.

Both selectors scan a seeded random permutation of the taxonomy's 30 instructions once
(one permutation per task, from ``(seed, task_id)``, so a task's order does not depend on
which other tasks are in the file) and keep instructions that apply to the task and do
not conflict with those already kept (the taxonomy's symmetric conflict map), until k.
Kept instructions stay in scan order: position matters for the position analysis.

**Rule selector** (no model). Facts are read from the task: the reference solution's
AST (``canonical_solution``), its ``libs`` and its prompt. An instruction applies when:

- ``library_2`` (pandas): the task uses pandas (libs, imports, or ``pandas``/
  ``DataFrame`` in the prompt);
- ``library_1`` (pathlib) and ``style_7`` (open modes): files or paths are involved
  (``open()``, ``os``/``os.path``/``shutil``/``glob``/``pathlib`` imports, or a prompt
  mentioning files, directories or paths); ``style_7`` needs ``open()`` or files;
- ``error_1`` (raise from) and ``error_3`` (OSError): the reference raises or catches;
  ``error_2`` and ``error_4`` (exception messages): the reference raises;
- ``style_2`` (sorted imports): the reference imports something;
- ``style_8`` (magic values): the reference compares with a literal;
- ``style_9`` (unused unpacked names): the reference unpacks a tuple;
- ``logic_2/3/7/9`` (nesting, branches, complexity, boolean terms): the reference
  branches (``if``/``for``/``while``/``try``); ``logic_8`` (comprehensions): it loops;
- ``style_6``, ``logic_4``, ``logic_5``, ``logic_6``, ``doc_1``, ``doc_3``: it defines a
  function (or, for stdin programs, always);
- everything else (``style_1/3/4/5``, ``logic_1``, ``doc_2/4/5/6``) always.

A task without reference code applies every structural rule (nothing is known against
it) but no ``error_*`` rule (nothing shows it raises) and library rules only from libs
and prompt.

Rule parameters, "achievable and challenging" from the reference:

- "at most N" limits (``max_branches``, ``max_statements``, ``max_locals``,
  ``max_complexity``, ``max_nested_blocks``, ``max_bool_expr``): with ``r`` the
  reference's largest value over its functions (measured on the AST, approximating
  Ruff's counting), ``N = min(r - 1, floor(0.8 r))`` clamped to the parameter's range:
  at least one and at least 20 % tighter than the reference (so the reference itself
  does not pass), yet reachable by extracting helpers; never below the parameter's
  minimum. Without reference code: the parameter's first recommended value.
- ``line_length``: 79 when every reference line fits in 79, else 88 (recommended values).
- ``max_doc_length``: 72 (PEP 8's docstring limit).
- ``convention``: ``numpy`` when the reference docstring has numpy section underlines,
  ``google`` otherwise.

Every assignment goes through :meth:`Taxonomy.repair`; each repair is recorded.

**LLM selector.** The model gets the task and the permutation (with each instruction's
parameter schema) and returns, as JSON validated by a pydantic schema, the kept ids in
scan order with parameters. Repairs, each recorded in ``param_repairs``: unknown ids,
duplicates, conflicting ids and ids beyond k are dropped; kept ids are put back in scan
order; unknown parameter keys are removed and invalid values reverted to defaults
(:meth:`Taxonomy.repair`); when fewer than k survive, the rule selector's scan fills the
rest (recorded as ``filled by rule``); a failed model call falls back to the rule
selection (recorded).

**Invalid-parameter rate** = repaired parameter assignments / all parameter assignments,
where the assignments of one kept instruction are its declared parameters plus any
unknown keys the selector gave.
"""

from __future__ import annotations

import ast
import json
import math
import random
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from prefjudge.backends.base import Backend, OnResult, Request, Result, Sampling, chat
from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, InstructionRef, InstructionSpec, Task
from prefjudge.scoring.tasks import imported_modules
from prefjudge.scoring.taxonomy import CATEGORIES, Taxonomy, load_taxonomy

_FILE_WORDS = re.compile(r"\b(files?|director(y|ies)|paths?|folders?|csv|json file)\b", re.I)
_FILE_MODULES = {"os", "shutil", "glob", "pathlib", "tempfile", "csv", "zipfile", "tarfile"}
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith)
LIMIT_PARAMS = {
    "max_branches": "branches",
    "max_statements": "statements",
    "max_locals": "locals",
    "max_complexity": "complexity",
    "max_nested_blocks": "nesting",
    "max_bool_expr": "bool_terms",
}


@dataclass(frozen=True)
class TaskFacts:
    """What the rule selector knows about a task.

    Attributes:
        has_code: A parsable reference solution exists.
        uses_pandas: pandas appears in libs, imports or the prompt.
        uses_files: Files or paths are involved (imports, ``open()`` or the prompt).
        uses_open: The reference calls ``open()``.
        raises: The reference has a ``raise`` statement.
        catches: The reference has an ``except`` clause.
        imports: The reference imports something.
        compares_literal: The reference compares with a literal constant.
        unpacks: The reference unpacks a tuple in an assignment or loop.
        branches_any: The reference has an ``if``/loop/``try``.
        loops: The reference has a ``for`` or ``while`` loop.
        has_function: The reference defines a function.
        longest_line: Longest reference line, in characters.
        numpy_docstring: The reference's docstrings use numpy section underlines.
        metrics: Largest per-function value of each limit metric (see ``LIMIT_PARAMS``).
    """

    has_code: bool = False
    uses_pandas: bool = False
    uses_files: bool = False
    uses_open: bool = False
    raises: bool = False
    catches: bool = False
    imports: bool = False
    compares_literal: bool = False
    unpacks: bool = False
    branches_any: bool = False
    loops: bool = False
    has_function: bool = False
    longest_line: int = 0
    numpy_docstring: bool = False
    metrics: dict[str, int] = field(default_factory=dict)


def _parse(source: str | None) -> ast.Module | None:
    if not source:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _bool_terms(node: ast.AST) -> int:
    if isinstance(node, ast.BoolOp):
        return sum(_bool_terms(value) for value in node.values)
    return 1


def _nesting(nodes: Iterable[ast.AST], depth: int = 0) -> int:
    deepest = depth
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner = depth + 1 if isinstance(node, _BLOCKS) else depth
        deepest = max(deepest, _nesting(ast.iter_child_nodes(node), inner))
    return deepest


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """Nodes of a function body, not descending into nested functions or classes."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def function_metrics(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    """Approximate Ruff's per-function limit metrics on the AST.

    Args:
        func: A function definition.

    Returns:
        ``branches`` (PLR0912: ``if``/``elif``/``else``, loops and their ``else``,
        ``except``/``else``/``finally``), ``statements`` (PLR0915), ``locals`` (PLR0914:
        distinct assigned names, parameters excluded), ``complexity`` (C901: McCabe),
        ``nesting`` (PLR1702: deepest nested block), ``bool_terms`` (PLR0916: most
        boolean terms in one ``if`` condition).
    """
    nodes = _own_nodes(func)
    branches = 0
    complexity = 1
    bool_terms = 0
    for node in nodes:
        if isinstance(node, ast.If):
            branches += 1
            if node.orelse and not (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)):
                branches += 1
            bool_terms = max(bool_terms, _bool_terms(node.test))
            complexity += 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            branches += 1 + bool(node.orelse)
            complexity += 1 + bool(node.orelse)
        elif isinstance(node, ast.Try):
            branches += len(node.handlers) + bool(node.orelse) + bool(node.finalbody)
            complexity += len(node.handlers) + bool(node.orelse)
        elif isinstance(node, (ast.IfExp, ast.comprehension)):
            complexity += 1 + (len(node.ifs) if isinstance(node, ast.comprehension) else 0)
        elif isinstance(node, ast.BoolOp):
            complexity += len(node.values) - 1
    params = {a.arg for a in func.args.args + func.args.kwonlyargs + func.args.posonlyargs}
    params |= {a.arg for a in (func.args.vararg, func.args.kwarg) if a is not None}
    stored = {
        node.id
        for node in nodes
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    return {
        "branches": branches,
        "statements": sum(isinstance(node, ast.stmt) for node in nodes),
        "locals": len(stored - params),
        "complexity": complexity,
        "nesting": _nesting(func.body),
        "bool_terms": bool_terms,
    }


def task_facts(task: Task) -> TaskFacts:
    """Read the facts the rule selector needs from a task.

    Args:
        task: Any task; the reference solution is parsed when present.

    Returns:
        The facts.
    """
    code = task.canonical_solution or ""
    tree = _parse(code)
    modules = imported_modules(code) | {lib.split(".", 1)[0] for lib in task.libs}
    prompt_pandas = "pandas" in task.prompt or "DataFrame" in task.prompt
    prompt_files = bool(_FILE_WORDS.search(task.prompt))
    if tree is None:
        return TaskFacts(
            uses_pandas="pandas" in modules or prompt_pandas,
            uses_files=bool(modules & _FILE_MODULES) or prompt_files,
        )
    nodes = list(ast.walk(tree))
    uses_open = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open"
        for n in nodes
    )
    functions = [n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    metrics: dict[str, int] = dict.fromkeys(LIMIT_PARAMS.values(), 0)
    for func in functions:
        for name, value in function_metrics(func).items():
            metrics[name] = max(metrics[name], value)
    docstrings = [ast.get_docstring(f) or "" for f in functions]
    return TaskFacts(
        has_code=True,
        uses_pandas="pandas" in modules or prompt_pandas,
        uses_files=bool(modules & _FILE_MODULES) or uses_open or prompt_files,
        uses_open=uses_open,
        raises=any(isinstance(n, ast.Raise) for n in nodes),
        catches=any(isinstance(n, ast.ExceptHandler) for n in nodes),
        imports=any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes),
        compares_literal=any(
            isinstance(n, ast.Compare)
            and any(isinstance(c, ast.Constant) for c in [n.left, *n.comparators])
            for n in nodes
        ),
        unpacks=any(
            isinstance(n, (ast.Assign, ast.For, ast.comprehension))
            and any(
                isinstance(t, (ast.Tuple, ast.List))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
            for n in nodes
        ),
        branches_any=any(isinstance(n, (ast.If, ast.For, ast.While, ast.Try)) for n in nodes),
        loops=any(isinstance(n, (ast.For, ast.While)) for n in nodes),
        has_function=bool(functions),
        longest_line=max((len(line) for line in code.splitlines()), default=0),
        numpy_docstring=any(re.search(r"\n\s*-{3,}\s*\n", d) for d in docstrings),
        metrics=metrics,
    )


def _needs_function(facts: TaskFacts) -> bool:
    return facts.has_function or not facts.has_code


_APPLICABLE: dict[str, Callable[[TaskFacts], bool]] = {
    "library_2": lambda f: f.uses_pandas,
    "library_1": lambda f: f.uses_files,
    "style_7": lambda f: f.uses_open or f.uses_files,
    "error_1": lambda f: f.raises or f.catches,
    "error_3": lambda f: f.raises or f.catches,
    "error_2": lambda f: f.raises,
    "error_4": lambda f: f.raises,
    "style_2": lambda f: f.imports or not f.has_code,
    "style_8": lambda f: f.compares_literal or not f.has_code,
    "style_9": lambda f: f.unpacks or not f.has_code,
    "logic_2": lambda f: f.branches_any or not f.has_code,
    "logic_3": lambda f: f.branches_any or not f.has_code,
    "logic_7": lambda f: f.branches_any or not f.has_code,
    "logic_9": lambda f: f.branches_any or not f.has_code,
    "logic_8": lambda f: f.loops or not f.has_code,
    "style_6": _needs_function,
    "logic_4": _needs_function,
    "logic_5": _needs_function,
    "logic_6": _needs_function,
    "doc_1": _needs_function,
    "doc_3": _needs_function,
}


def applicable(instruction_id: str, facts: TaskFacts) -> bool:
    """Whether the rule selector considers an instruction relevant to a task.

    Args:
        instruction_id: A taxonomy id (ids without a rule always apply).
        facts: The task's facts.

    Returns:
        True when the instruction applies.
    """
    rule = _APPLICABLE.get(instruction_id)
    return True if rule is None else rule(facts)


def scan_order(seed: int, task_id: str, ids: Sequence[str]) -> list[str]:
    """The seeded random permutation of instruction ids a selector scans for one task.

    Args:
        seed: Run seed.
        task_id: The task (each task gets its own permutation).
        ids: Instruction ids in taxonomy order.

    Returns:
        A permutation of ``ids``; the same for the same seed, task and ids.
    """
    order = list(ids)
    random.Random(f"prefjudge-augment:{seed}:{task_id}").shuffle(order)
    return order


def tightened_limit(reference: int, low: int, high: int) -> int:
    """An "at most N" value tighter than the reference's ``reference`` but achievable.

    Args:
        reference: The reference solution's value.
        low: Smallest allowed parameter value.
        high: Largest allowed parameter value.

    Returns:
        ``min(reference - 1, floor(0.8 * reference))`` clamped to ``[low, high]``.
    """
    return max(low, min(high, min(reference - 1, math.floor(0.8 * reference))))


def rule_params(spec: InstructionSpec, facts: TaskFacts) -> dict[str, Any]:
    """Parameter values for one instruction, chosen by the documented rules.

    Args:
        spec: The instruction.
        facts: The task's facts.

    Returns:
        A value for every parameter of the instruction.
    """
    params: dict[str, Any] = {}
    for param in spec.params:
        metric = LIMIT_PARAMS.get(param.name)
        if metric is not None and param.min is not None and param.max is not None:
            if facts.has_code:
                value: Any = tightened_limit(facts.metrics.get(metric, 0), param.min, param.max)
            else:
                value = param.recommended[0] if param.recommended else param.default
        elif param.name == "line_length":
            value = 79 if facts.longest_line <= 79 else 88
        elif param.name == "max_doc_length":
            value = 72
        elif param.name == "convention":
            value = "numpy" if facts.numpy_docstring else "google"
        else:
            value = param.recommended[0] if param.recommended else param.default
        params[param.name] = value
    return params


@dataclass
class Selection:
    """One task's selection, before it becomes an :class:`AugmentedTask`.

    Attributes:
        refs: Kept instructions with repaired parameters, in scan order.
        repairs: One line per repair or drop.
        assignments: Parameter assignments made (declared parameters plus unknown keys).
        repaired: Assignments that had to be repaired.
    """

    refs: list[InstructionRef] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    assignments: int = 0
    repaired: int = 0

    def add(self, taxonomy: Taxonomy, ref: InstructionRef) -> None:
        """Validate one assignment with :meth:`Taxonomy.repair`, recording each repair."""
        spec = taxonomy.get(ref.id)
        declared = {p.name for p in spec.params}
        fixed, repairs = taxonomy.repair(ref)
        self.assignments += len(declared | set(ref.params))
        self.repaired += len(repairs)
        self.repairs += [f"{ref.id}.{r.field}: {r.message} -> {r.action}" for r in repairs]
        self.refs.append(fixed)


def _conflicts(taxonomy: Taxonomy, instruction_id: str, kept: Iterable[str]) -> list[str]:
    conflicts = set(taxonomy.get(instruction_id).conflicts)
    return [other for other in kept if other in conflicts]


def rule_scan(
    task: Task, order: Sequence[str], k: int, taxonomy: Taxonomy, kept: Sequence[str] = ()
) -> list[str]:
    """Scan ``order`` once, keeping applicable, non-conflicting ids until k are kept.

    Args:
        task: The task.
        order: The permutation to scan.
        k: How many to keep in all.
        taxonomy: The taxonomy (conflicts).
        kept: Ids already kept (they count towards k and for conflicts).

    Returns:
        The newly kept ids, in scan order.
    """
    facts = task_facts(task)
    chosen = list(kept)
    new: list[str] = []
    for instruction_id in order:
        if len(chosen) >= k:
            break
        if instruction_id in chosen or _conflicts(taxonomy, instruction_id, chosen):
            continue
        if applicable(instruction_id, facts):
            chosen.append(instruction_id)
            new.append(instruction_id)
    return new


def _augmented(
    task: Task, selection: Selection, selector: str, seed: int, order: Sequence[str], k: int
) -> AugmentedTask:
    data = task.model_dump()
    data.pop("instructions", None)
    metadata = dict(data.pop("metadata", {}) or {})
    metadata["augment"] = {
        "k": k,
        "scan_order": list(order),
        "param_assignments": selection.assignments,
        "param_repaired": selection.repaired,
    }
    return AugmentedTask(
        **data,
        metadata=metadata,
        instructions=selection.refs,
        selector=selector,
        selector_seed=seed,
        param_repairs=selection.repairs,
    )


def select_rule(
    task: Task, k: int = 5, seed: int = 0, taxonomy: Taxonomy | None = None
) -> AugmentedTask:
    """Choose k instructions and their parameters for a task by deterministic rules.

    Args:
        task: The task.
        k: Instructions to choose (fewer when fewer apply).
        seed: Permutation seed.
        taxonomy: The taxonomy (the bundled one by default).

    Returns:
        The augmented task (``selector="rule"``).
    """
    taxonomy = taxonomy or load_taxonomy()
    order = scan_order(seed, task.task_id, taxonomy.ids)
    facts = task_facts(task)
    selection = Selection()
    for instruction_id in rule_scan(task, order, k, taxonomy):
        spec = taxonomy.get(instruction_id)
        selection.add(taxonomy, InstructionRef(id=instruction_id, params=rule_params(spec, facts)))
    return _augmented(task, selection, "rule", seed, order, k)


# -- LLM selector -----------------------------------------------------------------------------


class ParamValue(BaseModel):
    """One parameter assignment in the selector's reply."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: int | str


class SelectedInstruction(BaseModel):
    """One kept instruction in the selector's reply."""

    model_config = ConfigDict(extra="forbid")

    id: str
    params: list[ParamValue] = Field(default_factory=list)


class SelectorReply(BaseModel):
    """The selector model's structured reply: kept instructions in scan order."""

    model_config = ConfigDict(extra="forbid")

    instructions: list[SelectedInstruction]


def _param_schema(spec: InstructionSpec) -> str:
    parts = []
    for p in spec.params:
        if p.type == "int":
            parts.append(f"{p.name}: integer {p.min}..{p.max} (default {p.default})")
        else:
            parts.append(f"{p.name}: one of {p.choices} (default {p.default!r})")
    return "; ".join(parts) or "no parameters"


def selector_prompt(task: Task, order: Sequence[str], k: int, taxonomy: Taxonomy) -> str:
    """The selector model's prompt for one task (template ``rubrics/prompts/augment_selector.md``).

    Args:
        task: The task (prompt and, when known, reference solution).
        order: The permutation to scan.
        k: How many instructions to keep.
        taxonomy: The taxonomy.

    Returns:
        The prompt text.
    """
    template = (data_dir("rubrics") / "prompts" / "augment_selector.md").read_text("utf-8")
    lines = []
    for position, instruction_id in enumerate(order, start=1):
        spec = taxonomy.get(instruction_id)
        conflicts = f"; conflicts with {', '.join(spec.conflicts)}" if spec.conflicts else ""
        lines.append(
            f"{position}. {spec.id} ({spec.category}): {spec.description.strip()} "
            f"[parameters: {_param_schema(spec)}{conflicts}]"
        )
    text = task.prompt.strip()
    if task.canonical_solution:
        text += "\n\nReference solution:\n```python\n" + task.canonical_solution[:4000] + "\n```"
    return template.format(k=k, task=text, candidates="\n".join(lines))


def selector_request(
    task: Task, order: Sequence[str], k: int, taxonomy: Taxonomy, sampling: Sampling | None = None
) -> Request:
    """The structured-output request the LLM selector sends for one task.

    Args:
        task: The task.
        order: The permutation to scan.
        k: How many instructions to keep.
        taxonomy: The taxonomy.
        sampling: Sampling settings (default: greedy, 512 tokens).

    Returns:
        A request whose reply must match :class:`SelectorReply`.
    """
    return chat(
        f"augment:{task.task_id}",
        selector_prompt(task, order, k, taxonomy),
        sampling=sampling or Sampling(max_tokens=512),
        schema_model=SelectorReply,
    )


def parse_selection(
    task: Task,
    reply: SelectorReply,
    order: Sequence[str],
    k: int,
    taxonomy: Taxonomy,
) -> Selection:
    """Turn a selector reply into a valid selection, recording every repair.

    Args:
        task: The task (for the rule fill when fewer than k survive).
        reply: The model's parsed reply.
        order: The permutation that was scanned.
        k: How many instructions to keep.
        taxonomy: The taxonomy.

    Returns:
        The selection: unknown, duplicate, conflicting and surplus ids dropped, the rest
        in scan order with repaired parameters, topped up to k by the rule scan.
    """
    selection = Selection()
    kept: list[tuple[str, dict[str, Any]]] = []
    for index, item in enumerate(reply.instructions):
        where = f"instructions[{index}] {item.id!r}"
        if item.id not in taxonomy:
            selection.repairs.append(f"{where}: unknown instruction id -> dropped")
            continue
        if any(item.id == other for other, _ in kept):
            selection.repairs.append(f"{where}: duplicate -> dropped")
            continue
        clash = _conflicts(taxonomy, item.id, [other for other, _ in kept])
        if clash:
            selection.repairs.append(f"{where}: conflicts with {clash[0]} -> dropped")
            continue
        if len(kept) >= k:
            selection.repairs.append(f"{where}: beyond k={k} -> dropped")
            continue
        params: dict[str, Any] = {}
        for assignment in item.params:
            params[assignment.name] = assignment.value
        kept.append((item.id, params))
    position = {instruction_id: i for i, instruction_id in enumerate(order)}
    ordered = sorted(kept, key=lambda pair: position.get(pair[0], len(order)))
    if [i for i, _ in ordered] != [i for i, _ in kept]:
        selection.repairs.append("selection: not in scan order -> reordered")
    filled = rule_scan(task, order, k, taxonomy, kept=[i for i, _ in ordered])
    if filled:
        selection.repairs.append(
            f"selection: {len(ordered)} of {k} kept -> filled by rule: {', '.join(filled)}"
        )
    facts = task_facts(task)
    rule_refs = {i: rule_params(taxonomy.get(i), facts) for i in filled}
    merged = ordered + [(i, rule_refs[i]) for i in filled]
    merged.sort(key=lambda pair: position.get(pair[0], len(order)))
    for instruction_id, params in merged:
        selection.add(taxonomy, InstructionRef(id=instruction_id, params=params))
    return selection


def select_llm(
    tasks: Sequence[Task],
    backend: Backend,
    *,
    k: int = 5,
    seed: int = 0,
    taxonomy: Taxonomy | None = None,
    sampling: Sampling | None = None,
    on_result: OnResult | None = None,
) -> list[AugmentedTask]:
    """Choose instructions with a selector model (one structured request per task).

    Args:
        tasks: The tasks.
        backend: A backend (its ``model_id`` names the selector).
        k: Instructions per task.
        seed: Permutation seed.
        taxonomy: The taxonomy (the bundled one by default).
        sampling: Sampling settings for the selector.
        on_result: Called once per finished request (progress).

    Returns:
        One augmented task per task, in order. A failed request falls back to the rule
        selection for that task (``selector="rule"``, the failure recorded).
    """
    taxonomy = taxonomy or load_taxonomy()
    orders = [scan_order(seed, task.task_id, taxonomy.ids) for task in tasks]
    requests = [
        selector_request(task, order, k, taxonomy, sampling)
        for task, order in zip(tasks, orders, strict=True)
    ]
    results: list[Result] = backend.generate(requests, on_result=on_result)
    out = []
    for task, order, result in zip(tasks, orders, results, strict=True):
        if result.ok and isinstance(result.parsed, SelectorReply):
            selection = parse_selection(task, result.parsed, order, k, taxonomy)
            out.append(_augmented(task, selection, f"llm:{backend.model_id}", seed, order, k))
            continue
        fallback = select_rule(task, k, seed, taxonomy)
        fallback.param_repairs.insert(
            0, f"llm selector failed ({result.error or 'no parsed reply'}) -> rule selection"
        )
        out.append(fallback)
    return out


# -- summary ----------------------------------------------------------------------------------


def summarize(
    augmented: Iterable[AugmentedTask], taxonomy: Taxonomy | None = None
) -> dict[str, Any]:
    """Category distribution and invalid-parameter rate of augmented tasks.

    Args:
        augmented: Augmented tasks (from this run or resumed).
        taxonomy: The taxonomy (the bundled one by default).

    Returns:
        ``tasks``, ``instructions``, ``categories`` (count per category, all five),
        ``category_share``, ``by_instruction`` (count per id), ``selectors`` (count per
        selector), ``param_assignments``, ``param_repaired``, ``invalid_param_rate``
        (None when nothing was assigned) and ``short_tasks`` (ids given fewer than k).
    """
    taxonomy = taxonomy or load_taxonomy()
    categories = Counter(dict.fromkeys(CATEGORIES, 0))
    by_instruction: Counter[str] = Counter()
    selectors: Counter[str] = Counter()
    assignments = repaired = tasks = 0
    short = []
    for task in augmented:
        tasks += 1
        selectors[task.selector] += 1
        stats = task.metadata.get("augment", {})
        assignments += int(stats.get("param_assignments", 0))
        repaired += int(stats.get("param_repaired", 0))
        if len(task.instructions) < int(stats.get("k", len(task.instructions))):
            short.append(task.task_id)
        for ref in task.instructions:
            by_instruction[ref.id] += 1
            categories[taxonomy.get(ref.id).category] += 1
    total = sum(categories.values())
    return {
        "tasks": tasks,
        "instructions": total,
        "categories": dict(categories),
        "category_share": {c: (n / total if total else 0.0) for c, n in categories.items()},
        "by_instruction": dict(sorted(by_instruction.items())),
        "selectors": dict(selectors),
        "param_assignments": assignments,
        "param_repaired": repaired,
        "invalid_param_rate": repaired / assignments if assignments else None,
        "short_tasks": short,
    }


def dumps_summary(summary: dict[str, Any]) -> str:
    """The summary as indented JSON text."""
    return json.dumps(summary, indent=2, sort_keys=False)
