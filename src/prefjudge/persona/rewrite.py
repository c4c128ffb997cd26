"""Rewrite benchmark tasks in a persona's voice without changing the task.

Two modes, chosen per task from its prompt:

* ``full`` (natural-language prompts, e.g. MBPP+): the model first lists 2–3 concrete
  wording changes per input-preference field that leave the task alone, then composes a
  short first-person request; example lines of the original (``assert ...``, ``>>> ...``)
  are appended verbatim, so the examples the tests rely on cannot drift.
* ``prefix`` (prompts that carry code context, e.g. a HumanEval signature and docstring):
  the model writes only a short persona prefix; the code stays byte-for-byte the same.

Every rewrite is then checked: a model judges whether the end goal and the set of correct
solutions are unchanged (two booleans and a reason), and deterministic checks the paper
lacks confirm that the rewrite is not degenerate (looping text) or too short to restate the
task, that the rewritten prompt still names the entry point, and that the task's reference
solution still passes the task's tests in the sandbox. A rewrite that fails is
tried again with a new sample (up to ``max_attempts``) and otherwise rejected with reasons.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from prefjudge.backends import Backend, Request, Result, Sampling, chat
from prefjudge.judge.prompts import load_template
from prefjudge.persona.profile import input_profile_text
from prefjudge.records import Persona, Task

CODE_LINE = re.compile(r"^\s*(def |class |import |from \S+ import |@)", re.M)
EXAMPLE_LINE = re.compile(r"^\s*(assert\b|>>>)")
OnResult = Callable[[Result], None]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


Change = Annotated[str, Field(min_length=3, max_length=160)]


class ChangesReply(_Reply):
    """Planned wording changes, 2–3 per input-preference field."""

    expertise: list[Change] = Field(min_length=1, max_length=3)
    verbosity: list[Change] = Field(min_length=1, max_length=3)
    tone: list[Change] = Field(min_length=1, max_length=3)
    mentions: list[Change] = Field(min_length=1, max_length=3)
    avoids: list[Change] = Field(min_length=1, max_length=3)


class ComposeReply(_Reply):
    """The rewritten request."""

    prompt: str = Field(min_length=10, max_length=1500)


class PrefixReply(_Reply):
    """A persona prefix for a code-context prompt."""

    prefix: str = Field(min_length=10, max_length=600)


class PreserveReply(_Reply):
    """The model's semantic-preservation check."""

    reason: str = Field(default="", max_length=400)
    same_goal: bool
    same_solutions: bool


@dataclass(frozen=True)
class PromptParts:
    """A task prompt split for rewriting.

    Attributes:
        mode: ``full`` or ``prefix``.
        text: The part the persona may reword (``full``), or the whole prompt (``prefix``).
        examples: Example lines kept verbatim after the rewritten text (``full`` only).
    """

    mode: str
    text: str
    examples: str = ""


def split_prompt(prompt: str) -> PromptParts:
    """Decide the rewrite mode of a prompt and split off its example lines.

    Args:
        prompt: The task prompt.

    Returns:
        ``prefix`` mode when the prompt carries code context (a ``def``, ``class``, import or
        decorator line), else ``full`` mode with ``assert``/``>>>`` example lines set apart.
    """
    if CODE_LINE.search(prompt):
        return PromptParts("prefix", prompt)
    text, examples = [], []
    for line in prompt.strip().strip('"').strip().splitlines():
        (examples if EXAMPLE_LINE.match(line) or examples else text).append(line)
    return PromptParts("full", "\n".join(text).strip(), "\n".join(examples).strip())


def assemble(parts: PromptParts, rewritten: str) -> str:
    """The rewritten prompt: persona text plus the untouched parts."""
    if parts.mode == "prefix":
        return f"{rewritten.strip()}\n\n{parts.text.lstrip(chr(10))}"
    return rewritten.strip() + (f"\n{parts.examples}" if parts.examples else "")


def degenerate(text: str) -> bool:
    """Whether a rewrite is degenerate: long and highly repetitive (a looping model).

    Text of 120 characters or more that zlib compresses below a quarter of its size is
    far more repetitive than any natural request (prose compresses to about half).
    """
    data = text.encode("utf-8")
    return len(data) >= 120 and len(zlib.compress(data, 9)) < 0.25 * len(data)


def too_short(parts: PromptParts, written: str) -> str | None:
    """Why a full-mode rewrite is too short to carry the task, or None.

    A request under five words, or under 30 % of the original's words, cannot restate the
    task (a small model's "is_not_prime" plus the kept example is not a request).
    """
    if parts.mode != "full":
        return None
    have, had = len(written.split()), len(parts.text.split())
    if have < 5 or have < 0.3 * had:
        return f"too short to carry the task: {have} words for {had} in the original"
    return None


def names_entry_point(task: Task, prompt: str) -> bool:
    """Whether the prompt names the task's entry point as a word (True when there is none)."""
    return (
        not task.entry_point or re.search(rf"\b{re.escape(task.entry_point)}\b", prompt) is not None
    )


@dataclass
class RewriteState:
    """One task's rewrite attempts."""

    task: Task
    parts: PromptParts
    attempts: int = 0
    prompt: str | None = None
    written: str = ""  # what the model wrote (the prompt minus the untouched parts)
    changes: dict[str, list[str]] = field(default_factory=dict)
    check: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    accepted: bool = False
    reference: str | None = None  # "pass", "fail: ...", "skipped: ..."


@dataclass
class TaskRewrite:
    """What happened to one task.

    Attributes:
        task: The rewritten task (accepted) or the original (rejected).
        accepted: Whether the rewrite passed every check.
        reasons: Why each attempt was rejected (empty when the first was accepted).
        attempts: Rewrite attempts made.
        mode: ``full`` or ``prefix``.
    """

    task: Task
    accepted: bool
    reasons: list[str]
    attempts: int
    mode: str


class RejectedRewrite(BaseModel):
    """A task whose rewrite failed every attempt (a line of the ``.rejected.jsonl`` file).

    Attributes:
        task_id: The task.
        persona: The persona.
        mode: ``full`` or ``prefix``.
        attempts: Rewrite attempts made.
        reasons: Why each attempt was rejected.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    persona: str
    mode: str
    attempts: int
    reasons: list[str] = Field(default_factory=list)


ReferenceCheck = Callable[[Sequence[Task]], list[str]]


def _check_problem(st: RewriteState, n: int) -> str | None:
    """What is wrong with attempt ``n``'s checked draft of ``st``, or None."""
    if not (st.check["same_goal"] and st.check["same_solutions"]):
        return (
            f"attempt {n}: judged not equivalent (same_goal="
            f"{st.check['same_goal']}, same_solutions="
            f"{st.check['same_solutions']}): {st.check['reason']}"
        )
    if degenerate(st.written):
        return f"attempt {n}: the rewrite is degenerate (repetitive text)"
    if short := too_short(st.parts, st.written):
        return f"attempt {n}: the rewrite is {short}"
    if not names_entry_point(st.task, st.prompt or ""):
        return (
            f"attempt {n}: the rewritten prompt does not name the entry "
            f"point {st.task.entry_point!r}"
        )
    return None


class Rewriter:
    """Rewrites tasks for one persona, batching each step across tasks."""

    def __init__(
        self,
        backend: Backend,
        persona: Persona,
        sampling: Sampling,
        *,
        max_attempts: int = 3,
        retry_temperature: float = 0.7,
        reference_check: ReferenceCheck | None = None,
    ):
        self.backend = backend
        self.persona = persona
        self.sampling = sampling
        self.max_attempts = max_attempts
        self.retry_temperature = retry_temperature
        self.reference_check = reference_check
        self.profile = input_profile_text(persona)

    def _sampling(self, attempt: int) -> Sampling:
        if attempt == 0:
            return self.sampling
        temperature = max(self.sampling.temperature, self.retry_temperature)
        return self.sampling.model_copy(update={"temperature": temperature})

    def _request(
        self, st: RewriteState, step: str, schema: type[BaseModel], **values: str
    ) -> Request:
        system, user = load_template(step).render(**values)
        return chat(
            f"{st.task.task_id}:{self.persona.name}:{step}",
            ("system", system),
            user,
            schema_model=schema,
            sampling=self._sampling(st.attempts),
            sample=st.attempts,
        )

    def _run(
        self, pending: list[tuple[RewriteState, Request]], on_result: OnResult | None
    ) -> list[tuple[RewriteState, Result]]:
        results = self.backend.generate([r for _, r in pending], on_result=on_result)
        return [(st, res) for (st, _), res in zip(pending, results, strict=True)]

    def rewrite(
        self, tasks: Sequence[Task], on_result: OnResult | None = None
    ) -> list[TaskRewrite]:
        """Rewrite tasks, check them, retry failures, and report every outcome.

        Args:
            tasks: The tasks.
            on_result: Called per backend result (progress).

        Returns:
            One outcome per task, in order.
        """
        states = [RewriteState(t, split_prompt(t.prompt)) for t in tasks]
        for _ in range(self.max_attempts):
            todo = [st for st in states if not st.accepted]
            if not todo:
                break
            self._attempt(todo, on_result)
            for st in todo:
                st.attempts += 1
        return [self._outcome(st) for st in states]

    def _attempt(self, states: list[RewriteState], on_result: OnResult | None) -> None:
        for st in states:
            st.prompt, st.written, st.check = None, "", {}
        self._draft(states, on_result)
        passed = self._check(states, on_result)
        self._accept(passed)

    def _draft(self, states: list[RewriteState], on_result: OnResult | None) -> None:
        """Step 1: each task's rewrite (changes then composition, or the prefix)."""
        entry = {id(st): st.task.entry_point or "(none: a program reading stdin)" for st in states}
        # step 1: changes (full) or the prefix (prefix mode)
        first = []
        for st in states:
            if st.parts.mode == "full":
                first.append(
                    (
                        st,
                        self._request(
                            st,
                            "rewrite_changes",
                            ChangesReply,
                            task=st.parts.text,
                            profile=self.profile,
                            entry_point=entry[id(st)],
                        ),
                    )
                )
            else:
                first.append(
                    (
                        st,
                        self._request(
                            st,
                            "rewrite_prefix",
                            PrefixReply,
                            task=st.task.prompt,
                            profile=self.profile,
                        ),
                    )
                )
        compose = []
        for st, result in self._run(first, on_result):
            if not result.ok:
                st.problems.append(
                    f"attempt {st.attempts + 1}: rewrite failed: "
                    f"{result.error_kind}: {result.error}"
                )
            elif st.parts.mode == "prefix":
                st.written = result.parsed.prefix
                st.prompt = assemble(st.parts, st.written)
            else:
                st.changes = result.parsed.model_dump()
                listing = "\n".join(f"- {k}: " + "; ".join(v) for k, v in st.changes.items())
                compose.append(
                    (
                        st,
                        self._request(
                            st,
                            "rewrite_compose",
                            ComposeReply,
                            task=st.parts.text,
                            profile=self.profile,
                            changes=listing,
                            entry_point=entry[id(st)],
                        ),
                    )
                )
        for st, result in self._run(compose, on_result):
            if result.ok:
                st.written = result.parsed.prompt
                st.prompt = assemble(st.parts, st.written)
            else:
                st.problems.append(
                    f"attempt {st.attempts + 1}: compose failed: "
                    f"{result.error_kind}: {result.error}"
                )

    def _check(self, states: list[RewriteState], on_result: OnResult | None
               ) -> list[RewriteState]:
        """Step 2: the drafts that pass the model's preservation check and the static ones."""
        # step 2: checks (model check, then the deterministic ones)
        drafted = [st for st in states if st.prompt is not None]
        checks = [
            (
                st,
                self._request(
                    st,
                    "preserve",
                    PreserveReply,
                    original=st.task.prompt,
                    rewritten=st.prompt or "",
                ),
            )
            for st in drafted
        ]
        passed = []
        for st, result in self._run(checks, on_result):
            n = st.attempts + 1
            if not result.ok:
                st.problems.append(
                    f"attempt {n}: preservation check failed: {result.error_kind}: {result.error}"
                )
                continue
            st.check = result.parsed.model_dump()
            problem = _check_problem(st, n)
            if problem:
                st.problems.append(problem)
            else:
                passed.append(st)
        return passed

    def _accept(self, passed: list[RewriteState]) -> None:
        """Step 3: accept the checked drafts whose reference solution still passes."""
        if passed and self.reference_check is not None:
            rewritten = [self._task(st, st.attempts + 1) for st in passed]
            for st, verdict in zip(passed, self.reference_check(rewritten), strict=True):
                st.reference = verdict
                if verdict.startswith("fail"):
                    st.problems.append(f"attempt {st.attempts + 1}: reference solution: {verdict}")
                else:
                    st.accepted = True
        else:
            for st in passed:
                st.reference = "skipped: reference check disabled"
                st.accepted = True

    def _task(self, st: RewriteState, attempts: int) -> Task:
        meta = dict(st.task.metadata)
        meta["persona"] = {
            "name": self.persona.name,
            "original_prompt": st.task.prompt,
            "mode": st.parts.mode,
            "changes": st.changes,
            "preservation": st.check,
            "reference_check": st.reference,
            "attempts": attempts,
        }
        return st.task.model_copy(update={"prompt": st.prompt, "metadata": meta})

    def _outcome(self, st: RewriteState) -> TaskRewrite:
        if st.accepted:
            task = self._task(st, st.attempts)
            return TaskRewrite(task, True, st.problems, st.attempts, st.parts.mode)
        return TaskRewrite(st.task, False, st.problems, st.attempts, st.parts.mode)


def sandbox_reference_check(tasks: Sequence[Task]) -> list[str]:
    """Run each task's reference solution against its tests in the sandbox.

    Returns:
        Per task: ``pass``, ``fail: <detail>`` (also for timeouts and errors), or
        ``skipped: <why>`` when the task has no reference solution or no tests.
    """
    from prefjudge.sandbox import run_functional

    out: list[str | None] = [None] * len(tasks)
    jobs, where = [], []
    for i, task in enumerate(tasks):
        if not task.canonical_solution:
            out[i] = "skipped: no reference solution"
        elif task.test_format == "none":
            out[i] = "skipped: no tests"
        else:
            jobs.append((task, task.canonical_solution))
            where.append(i)
    for i, result in zip(where, run_functional(jobs), strict=True):
        out[i] = (
            "pass" if result.status == "pass" else f"fail: {result.status}: {result.detail[:200]}"
        )
    return [o or "skipped" for o in out]
