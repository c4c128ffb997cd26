"""The seeded sample: real and canonical solutions plus deliberately broken copies.

HumanEval+ and MBPP+: real model-written solutions from EvalPerf
(``generations/evalperf/*.brief.json``: per model, up to 20 test-passing solutions for 118
HumanEval+/MBPP+ tasks), plus broken copies of some of them. BigCodeBench: canonical
solutions (``complete_prompt + "\\n" + canonical_solution``, as BigCodeBench runs its
ground truth) plus broken copies. Every sample is ``{"task_id", "solution"}``: the format
both EvalPlus and BigCodeBench read, and one prefjudge reads too.

Broken copies (:func:`mutate`), each applied to the task's entry point:

- ``wrong-return``: the function is wrapped so that its result is perturbed (``not`` a bool,
  ``+ 1`` a number, ``+ "x"`` a string, one element fewer a list or tuple, else None);
- ``raise``: the function is redefined to raise ``RuntimeError``;
- ``infinite-loop``: the function is redefined to loop forever (not for BigCodeBench by
  default: its harness waits 240 s for a run);
- ``off-by-one``: the first ``range(...)`` call in the function gets ``- 1`` on its bound,
  else its first comparison ``<``/``>`` becomes ``<=``/``>=`` (or back); a function with
  neither gets ``wrong-return`` instead (the sample records the mutation applied).

Both peers require a sample for every task of the dataset they read, so each gets a subset
file (:func:`write_subset`) holding exactly the sampled tasks' lines of the local release
file, unchanged; prefjudge reads the release file itself (``--tasks``).
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

EVALPLUS_MUTATIONS = ("wrong-return", "raise", "off-by-one", "infinite-loop")
BIGCODEBENCH_MUTATIONS = ("wrong-return", "raise", "off-by-one")

DEFAULT_INCLUDE = "grok-beta:HumanEval/87:7"
"""EvalPerf's grok-beta solution 7 of HumanEval/87: a ```python example inside its docstring."""

_PERTURB = '''

def _broken_perturb(value):
    try:
        if isinstance(value, bool):
            return not value
        if isinstance(value, (int, float)):
            return value + 1
        if isinstance(value, str):
            return value + "x"
        if isinstance(value, (list, tuple)):
            return type(value)(list(value)[1:]) if value else type(value)([0])
    except Exception:
        pass
    return None


_broken_original = {name}


def {name}(*args, **kwargs):
    return _broken_perturb(_broken_original(*args, **kwargs))
'''
_RAISE = '''

def {name}(*args, **kwargs):
    raise RuntimeError("deliberately broken")
'''
_LOOP = '''

def {name}(*args, **kwargs):
    while True:
        pass
'''


@dataclass(frozen=True)
class Sample:
    """One line of a sample file, with where it came from.

    Attributes:
        task_id: The task.
        solution: The full code.
        origin: ``MODEL#INDEX`` (an EvalPerf solution) or ``canonical``.
        kind: ``real``, ``canonical`` or the mutation applied.
    """

    task_id: str
    solution: str
    origin: str
    kind: str


def read_release(path: Path) -> tuple[dict[str, dict], dict[str, str]]:
    """Read a benchmark release file (``.jsonl`` or ``.jsonl.gz``).

    Args:
        path: The file.

    Returns:
        Tasks by id, and each task's line exactly as in the file.
    """
    opener = gzip.open if path.name.endswith(".gz") else open
    tasks: dict[str, dict] = {}
    lines: dict[str, str] = {}
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
            tasks[record["task_id"]] = record
            lines[record["task_id"]] = line if line.endswith("\n") else line + "\n"
    return tasks, lines


def write_subset(lines: dict[str, str], task_ids: Iterable[str], path: Path) -> Path:
    """Write the release file's lines of ``task_ids`` (in file order) to ``path``."""
    wanted = set(task_ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line for tid, line in lines.items() if tid in wanted),
                    encoding="utf-8")
    return path


def write_samples(samples: list[Sample], path: Path) -> Path:
    """Write ``{"task_id", "solution"}`` lines, and beside them the samples' origins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for sample in samples:
            out.write(json.dumps({"task_id": sample.task_id, "solution": sample.solution}) + "\n")
    return path


def sample_keys(samples: list[Sample]) -> list[tuple[str, int]]:
    """Each sample's key: its task and how many earlier lines have the same task.

    This is how all three tools number samples: EvalPlus's and BigCodeBench's
    ``completion_id`` and prefjudge's ``sample``.
    """
    seen: dict[str, int] = {}
    keys = []
    for sample in samples:
        keys.append((sample.task_id, seen.get(sample.task_id, 0)))
        seen[sample.task_id] = seen.get(sample.task_id, 0) + 1
    return keys


def describe(samples: list[Sample]) -> list[dict]:
    """The samples as JSON-ready records with their keys (``TASK#N``)."""
    return [{"key": f"{tid}#{n}", **{k: v for k, v in asdict(s).items() if k != "solution"}}
            for (tid, n), s in zip(sample_keys(samples), samples, strict=True)]


# --- mutations ---------------------------------------------------------------------------


class _OffByOne(ast.NodeTransformer):
    """Change the first ``range`` bound, or failing that, the first strict/loose comparison."""

    _SWAP: ClassVar[dict[type, type]] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt,
                                         ast.Gt: ast.GtE, ast.GtE: ast.Gt}

    def __init__(self, target: str) -> None:
        self.target = target
        self.done = False

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if (self.target == "range" and not self.done and isinstance(node.func, ast.Name)
                and node.func.id == "range" and node.args):
            index = 0 if len(node.args) == 1 else 1
            node.args[index] = ast.BinOp(node.args[index], ast.Sub(), ast.Constant(1))
            self.done = True
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if self.target == "compare" and not self.done and type(node.ops[0]) in self._SWAP:
            node.ops[0] = self._SWAP[type(node.ops[0])]()
            self.done = True
        return node


def _off_by_one(code: str, entry_point: str) -> str | None:
    try:
        module = ast.parse(code)
    except SyntaxError:
        return None
    functions = [n for n in module.body
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry_point]
    if not functions:
        return None
    for target in ("range", "compare"):
        changer = _OffByOne(target)
        changer.visit(functions[-1])
        if changer.done:
            return ast.unparse(ast.fix_missing_locations(module)) + "\n"
    return None


def mutate(code: str, entry_point: str, kind: str) -> tuple[str, str]:
    """A broken copy of ``code``.

    Args:
        code: A full solution defining ``entry_point``.
        entry_point: The function the tests call.
        kind: One of :data:`EVALPLUS_MUTATIONS`.

    Returns:
        The broken code and the mutation applied (``off-by-one`` falls back to
        ``wrong-return`` when the function has no ``range`` call or comparison).
    """
    if kind == "off-by-one":
        changed = _off_by_one(code, entry_point)
        if changed is not None:
            return changed, kind
        kind = "wrong-return"
    template = {"wrong-return": _PERTURB, "raise": _RAISE, "infinite-loop": _LOOP}[kind]
    return code.rstrip("\n") + "\n" + template.format(name=entry_point), kind


def _broken(rng: random.Random, bases: list[Sample], count: int, tasks: dict[str, dict],
            kinds: tuple[str, ...]) -> list[Sample]:
    order = list(kinds) * (count // len(kinds) + 1)
    rng.shuffle(order)
    out = []
    for kind in order[:count]:
        base = rng.choice(bases)
        code, applied = mutate(base.solution, tasks[base.task_id]["entry_point"], kind)
        out.append(Sample(base.task_id, code, base.origin, applied))
    return out


# --- EvalPlus ----------------------------------------------------------------------------


def evalperf_pool(folder: Path) -> dict[str, list[Sample]]:
    """Every EvalPerf solution, by dataset (``humaneval``, ``mbpp``).

    Args:
        folder: ``generations/evalperf`` (``*_evalperf_results.brief.json``).

    Returns:
        Dataset → solutions (origin ``MODEL#INDEX``, the index in the model's ``profiled``
        list), in a stable order.
    """
    pool: dict[str, list[Sample]] = {"humaneval": [], "mbpp": []}
    files = sorted(folder.glob("*_evalperf_results.brief.json"))
    if not files:
        raise FileNotFoundError(f"no *_evalperf_results.brief.json in {folder}")
    for path in files:
        # e.g. gpt-4o-2024-08-06_openai_temp_1.0 -> gpt-4o-2024-08-06
        model = re.sub(r"_[a-z]+_temp_[0-9.]+", "", path.name.split("_evalperf_results")[0])
        data = json.loads(path.read_text(encoding="utf-8"))
        for task_id, entry in sorted(data["eval"].items()):
            dataset = "humaneval" if task_id.startswith("HumanEval/") else "mbpp"
            for index, item in enumerate(entry.get("profiled", [])):
                pool[dataset].append(Sample(task_id, item["solution"], f"{model}#{index}", "real"))
    return pool


def _find_include(pool: dict[str, list[Sample]], spec: str) -> tuple[str, Sample]:
    """``MODEL:TASK:INDEX`` (MODEL as the file name starts) → that EvalPerf solution."""
    try:
        model, task_id, index = spec.rsplit(":", 2)
    except ValueError:
        raise ValueError(f"--include {spec!r}: expected MODEL:TASK_ID:INDEX") from None
    for dataset, samples in pool.items():
        for sample in samples:
            name, _, number = sample.origin.rpartition("#")
            if sample.task_id == task_id and number == index and name.startswith(model):
                return dataset, sample
    raise ValueError(f"--include {spec!r}: no such EvalPerf solution")


def evalplus_sample(pool: dict[str, list[Sample]], tasks: dict[str, dict], dataset: str,
                    count: int, seed: int, broken_share: float,
                    include: list[str]) -> list[Sample]:
    """``count`` samples of one dataset: real solutions and broken copies of them.

    Args:
        pool: :func:`evalperf_pool`.
        tasks: The dataset's tasks (for entry points).
        dataset: ``humaneval`` or ``mbpp``.
        count: How many samples.
        seed: The seed (the same seed gives the same sample).
        broken_share: The share of broken copies.
        include: ``MODEL:TASK:INDEX`` solutions to include when of this dataset.

    Returns:
        The samples, grouped by task (as generators write them).
    """
    rng = random.Random(f"{seed}:{dataset}")
    candidates = [s for s in pool[dataset] if s.task_id in tasks]
    n_broken = round(count * broken_share)
    real = rng.sample(candidates, min(count - n_broken, len(candidates)))
    for spec in include:
        found_in, sample = _find_include(pool, spec)
        if found_in == dataset and sample not in real:
            real[:1] = [sample]  # in place of the first draw
    samples = real + _broken(rng, real, n_broken, tasks, EVALPLUS_MUTATIONS)
    return _grouped(samples)


def _grouped(samples: list[Sample]) -> list[Sample]:
    order: dict[str, int] = {}
    for sample in samples:
        order.setdefault(sample.task_id, len(order))
    return sorted(samples, key=lambda s: order[s.task_id])


# --- BigCodeBench ------------------------------------------------------------------------


def canonical(task: dict) -> Sample:
    """A BigCodeBench task's canonical solution as a sample (as its ground truth is run)."""
    return Sample(task["task_id"], task["complete_prompt"] + "\n" + task["canonical_solution"],
                  "canonical", "canonical")


def bigcodebench_sample(tasks: dict[str, dict], eligible: list[str], count: int, seed: int,
                        broken_share: float, kinds: tuple[str, ...] = BIGCODEBENCH_MUTATIONS
                        ) -> list[Sample]:
    """``count`` samples: canonical solutions of eligible tasks and broken copies of them.

    Args:
        tasks: Every task by id.
        eligible: The tasks that may be drawn (libraries import in both venvs; no waiting).
        count: How many samples.
        seed: The seed.
        broken_share: The share of broken copies.
        kinds: The mutations to use.

    Returns:
        The samples, grouped by task.
    """
    rng = random.Random(f"{seed}:bigcodebench")
    n_broken = round(count * broken_share)
    chosen = rng.sample(sorted(eligible, key=task_number), min(count - n_broken, len(eligible)))
    bases = [canonical(tasks[t]) for t in chosen]
    return _grouped(bases + _broken(rng, bases, n_broken, tasks, kinds))


def task_number(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[1])
