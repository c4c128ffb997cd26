"""Checking responses against instructions: the batched engine and the naive reference.

Both ways share everything except how Ruff is run: :func:`verify_batch` packs all Ruff
checks into a few runs over many files (see :mod:`prefjudge.scoring.verify.plan` and
:mod:`prefjudge.scoring.verify.thresholds`) and runs them in parallel; :func:`verify_naive` starts
one Ruff process per check, with exactly that check's rules and settings. Their results
are identical (the benchmark and the tests compare them).

Rules applied to every check (the verification profile, :mod:`prefjudge.scoring.profiles`,
decides which code is extracted, whether ``# noqa`` counts, Ruff's target version and a
few instructions' verifiers):

- code-level instructions look at :func:`~prefjudge.scoring.verify.extract.code_of` (the
  profile's :func:`~prefjudge.scoring.verify.extract.extract_code`, or a sample's code whole),
  or at the code the caller gives (:data:`Item`: the evidence judge gives the code the
  tests run), as :func:`~prefjudge.scoring.verify.extract.checked_code` reads it (strict:
  isort action comments neutralised); code
  that does not parse fails them with a reason starting ``does not parse``. Ruff's parser
  decides for Ruff checks, Python's own parser for the checks written in Python. A Python
  check beside Ruff (library_2's ``df`` part) on code that Ruff parses but this Python
  cannot (newer syntax) is ``error``: its verdict cannot be determined here;
- response-level instructions (doc_4, doc_6) look at the whole response;
- a Ruff failure (cannot start, bad configuration, crash, timeout) makes the affected
  checks ``error`` with the reason, never ``pass`` or ``fail``;
- an unknown instruction or invalid parameters make the check ``error``.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol

from prefjudge.lazy import collector_paused
from prefjudge.records import CheckResult, InstructionSpec, VerifierSpec
from prefjudge.scoring.profiles import Profile, get_profile
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy, resolve_settings
from prefjudge.scoring.verify.checks import (
    CODE_CHECKS,
    RESPONSE_CHECKS,
    CheckUndetermined,
    join_reasons,
    parse,
    parse_problem,
)
from prefjudge.scoring.verify.extract import checked_code, code_of
from prefjudge.scoring.verify.plan import RuffCheck
from prefjudge.scoring.verify.ruff_engine import RuffConfig, RuffOptions, RuffRunError
from prefjudge.scoring.verify.runners import (
    RuffBatch,
    RuffExecutor,
    RuffOutcome,
    run_batched,
    run_naive,
    scratch_files,
)


class RefLike(Protocol):
    """What verification reads of an instruction reference.

    An :class:`~prefjudge.records.InstructionRef`, or any object with these attributes
    (the verification process passes plain named tuples).
    """

    @property
    def id(self) -> str:
        """The instruction id."""

    @property
    def params(self) -> Mapping[str, Any]:
        """Its parameters (may be partial)."""


Item = (tuple[str, Sequence[RefLike]] | tuple[str, Sequence[RefLike], bool]
        | tuple[str, Sequence[RefLike], bool, str | None])
"""``(response text, instruction refs)``, or with a third element ``is_code``: True when the
text is code as a whole (a sample file's ``solution``; see
:func:`~prefjudge.scoring.verify.extract.code_of`), whose fenced docstring examples are
part of it, never the code to check; and a fourth, ``code``: the code the code-level
instructions check, chosen by the caller (None: found in the text by the profile).
Response-level instructions always read the text."""


def item_is_code(item: Item) -> bool:
    """Whether an item's text is code as a whole (its third element; without one, no)."""
    return len(item) > 2 and bool(item[2])


def item_code(item: Item) -> str | None:
    """The code the caller chose for an item's code-level checks (its fourth element), or None."""
    return item[3] if len(item) > 3 else None  # type: ignore[misc]


@dataclass(slots=True)
class _Response:
    """One response, with its code extracted and parsed on first need."""

    text: str
    profile: Profile
    is_code: bool = False
    given: str | None = None
    _code: str | None = None
    _parsed: bool = False
    _tree: ast.Module | None = None
    _problem: str | None = None
    _encoding: str | None = None

    @property
    def code(self) -> str:
        if self._code is None:
            found = self.given
            if found is None:
                found = code_of(self.text, self.profile, is_code=self.is_code)
            self._code = checked_code(found, self.profile)
        return self._code

    def encoding_problem(self) -> str | None:
        """Why the code cannot be written as UTF-8 (None when it can)."""
        if self._encoding is None:
            try:
                self.code.encode("utf-8")
                self._encoding = ""
            except UnicodeEncodeError as exc:
                self._encoding = f"not valid UTF-8 text ({exc.reason})"
        return self._encoding or None

    def parse(self) -> tuple[ast.Module | None, str | None]:
        """``(tree, None)`` when Python parses the code, else ``(None, why)``."""
        if not self._parsed:
            self._parsed = True
            self._problem = self.encoding_problem()
            if self._problem is None:
                try:
                    self._tree = parse(self.code)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    self._problem = parse_problem(self.code) or "invalid source"
        return self._tree, self._problem

    def release(self) -> None:
        """Forget the syntax tree (parsed again if asked), so a batch holds few at once."""
        self._tree, self._parsed = None, False


@dataclass(slots=True)
class _Check:
    """One instruction on one response, resolved."""

    item: int
    spec: InstructionSpec
    verifier: VerifierSpec
    params: dict[str, Any]
    result: CheckResult | None = None
    extra_reasons: list[str] = field(default_factory=list)
    python_problem: str | None = None


def verify_batch(
    items: list[Item],
    *,
    taxonomy: Taxonomy | None = None,
    workers: int | None = None,
    profile: str | Profile | None = None,
) -> list[list[CheckResult]]:
    """Check many responses against their instructions, batching Ruff.

    Args:
        items: ``(response text, instruction refs)`` pairs, or triples with ``is_code``
            (:data:`Item`); parameters may be partial
            (defaults are filled in from the taxonomy).
        taxonomy: Instruction taxonomy (the bundled one by default).
        workers: Ruff processes run in parallel (default: the CPU count).
        profile: Verification profile, ``reference`` (default) or ``strict``.

    Returns:
        For each item, one CheckResult per instruction ref, in the refs' order.
    """
    return _verify(items, taxonomy, workers, run_batched, get_profile(profile))


def verify_naive(
    items: list[Item],
    *,
    taxonomy: Taxonomy | None = None,
    workers: int | None = None,
    profile: str | Profile | None = None,
) -> list[list[CheckResult]]:
    """The one-process-per-check way: like :func:`verify_batch`, one Ruff run per check.

    Args:
        items: As for :func:`verify_batch`.
        taxonomy: Instruction taxonomy (the bundled one by default).
        workers: Ignored (one process at a time); accepted so the two are swappable.
        profile: Verification profile, ``reference`` (default) or ``strict``.

    Returns:
        For each item, one CheckResult per instruction ref, in the refs' order.
    """
    del workers
    return _verify(items, taxonomy, 1, run_naive, get_profile(profile))


def start_verify_batch(
    items: list[Item],
    *,
    taxonomy: Taxonomy | None = None,
    workers: int | None = None,
    profile: str | Profile | None = None,
) -> StartedBatch:
    """:func:`verify_batch` in two steps: start it now, take its results later.

    Starts the batch's Ruff runs in the background and does its checks written in Python
    at once; :meth:`StartedBatch.finish` waits for Ruff and gives the results, the same as
    ``verify_batch(items, ...)``. A caller with several batches (the verification process)
    starts the next before it finishes this one, so that the next one's Python checks run
    while this one's Ruff runs end.

    Args:
        items: As for :func:`verify_batch`.
        taxonomy: Instruction taxonomy (the bundled one by default).
        workers: Ruff processes run in parallel (default: the CPU count).
        profile: Verification profile, ``reference`` (default) or ``strict``.

    Returns:
        The started batch: call :meth:`~StartedBatch.finish` (or
        :meth:`~StartedBatch.close` to give it up) exactly once.
    """
    return _start(items, taxonomy, workers, run_batched, get_profile(profile))


class StartedBatch:
    """A batch whose Python checks are done and whose Ruff runs may still be going."""

    def __init__(self, rows: list[list[_Check | CheckResult]], pending: list[_Check],
                 running: Future[dict[int, RuffOutcome]] | None, stack: ExitStack) -> None:
        self._rows, self._pending, self._running, self._stack = rows, pending, running, stack

    def finish(self) -> list[list[CheckResult]]:
        """Wait for the batch's Ruff runs: one CheckResult per instruction ref, per item."""
        with collector_paused():
            try:
                found = self._running.result() if self._running is not None else {}
            finally:
                self._stack.close()  # the scratch files, the background thread
            for key, check in enumerate(self._pending):
                if check.result is None:
                    check.result = _ruff_result(check, found[key])
            return [[c if isinstance(c, CheckResult) else _final(c) for c in row]
                    for row in self._rows]

    def close(self) -> None:
        """Give the batch up: wait for its Ruff runs to end and remove their files."""
        self._stack.close()


def _verify(
    items: list[Item],
    taxonomy: Taxonomy | None,
    workers: int | None,
    execute: RuffExecutor,
    profile: Profile,
) -> list[list[CheckResult]]:
    """Resolve, start Ruff in the background, do the Python checks meanwhile, combine."""
    with collector_paused():  # for both steps at once
        return _start(items, taxonomy, workers, execute, profile).finish()


def _start(
    items: list[Item],
    taxonomy: Taxonomy | None,
    workers: int | None,
    execute: RuffExecutor,
    profile: Profile,
) -> StartedBatch:
    """Resolve, start Ruff in the background, do the Python checks (collector held off)."""
    stack = ExitStack()
    if not any(item[1] for item in items):
        # nothing to check: no taxonomy, no Ruff (0.3 s saved)
        return StartedBatch([[] for _ in items], [], None, stack)
    with collector_paused():  # checking makes no garbage cycles
        try:
            return _started(items, taxonomy or load_taxonomy(), workers, execute, profile,
                            stack)
        except BaseException:
            stack.close()
            raise


def _started(items: list[Item], taxonomy: Taxonomy, workers: int | None,
             execute: RuffExecutor, profile: Profile, stack: ExitStack) -> StartedBatch:
    """:func:`_start`'s work; ``stack`` takes the scratch files and the Ruff thread."""
    responses = [_Response(item[0], profile, item_is_code(item), item_code(item))
                 for item in items]
    resolve = _Resolver(taxonomy, profile)
    rows: list[list[_Check | CheckResult]] = [
        [resolve(index, ref) for ref in item[1]] for index, item in enumerate(items)
    ]
    checks = [check for row in rows for check in row if isinstance(check, _Check)]
    needs_cache: dict[Any, tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]] = {}
    pending: list[_Check] = []
    ruff_checks: list[RuffCheck] = []
    for check in checks:
        ruff_check = _ruff_part(check, responses[check.item], needs_cache)
        if ruff_check is not None:
            ruff_check.key = len(pending)
            ruff_checks.append(ruff_check)
            pending.append(check)
    running = None
    if ruff_checks:
        codes = {item: responses[item].code for item in sorted({c.item for c in ruff_checks})}
        workdir = stack.enter_context(scratch_files(codes))
        background = stack.enter_context(ThreadPoolExecutor(max_workers=1))
        batch = RuffBatch(ruff_checks, codes, workdir, RuffOptions.of(profile))
        running = background.submit(execute, batch, workers or os.cpu_count() or 1)
    for response, row in zip(responses, rows, strict=True):
        for check in row:
            if isinstance(check, _Check):
                _python_part(check, response)
        response.release()  # its checks are done: only a few trees are alive at once
    return StartedBatch(rows, pending, running, stack)


def _final(check: _Check) -> CheckResult:
    if check.result is None:  # pragma: no cover - every resolved check gets a result
        raise RuntimeError(f"no result for {check.spec.id}")
    return check.result


class _Resolver:
    """Turns instruction refs into checks (or error results), memoising the validation."""

    def __init__(self, taxonomy: Taxonomy, profile: Profile):
        self.taxonomy = taxonomy
        self.profile = profile
        self.memo: dict[Any, tuple[InstructionSpec, VerifierSpec, dict[str, Any]] | str] = {}

    def __call__(self, item: int, ref: RefLike) -> _Check | CheckResult:
        try:
            key = (ref.id, tuple(sorted(ref.params.items())))
            resolved = self.memo.get(key)
        except TypeError:  # unhashable parameter values (invalid anyway): no memo
            key, resolved = None, None
        if resolved is None:
            resolved = self._resolve(ref)
            if key is not None:
                self.memo[key] = resolved
        if isinstance(resolved, str):
            return CheckResult(id=ref.id, params=dict(ref.params), status="error", reason=resolved)
        spec, verifier, params = resolved
        return _Check(item, spec, verifier, dict(params))

    def _resolve(
        self, ref: RefLike
    ) -> tuple[InstructionSpec, VerifierSpec, dict[str, Any]] | str:
        result = self.taxonomy.check_params(ref.id, ref.params)
        if result.problems:
            return "; ".join(f"{p.field}: {p.message}" for p in result.problems)
        spec = self.taxonomy.get(ref.id)
        return spec, spec.verifier.for_profile(self.profile.name), result.params


def _ruff_part(check: _Check, response: _Response, cache: dict[Any, Any]) -> RuffCheck | None:
    """The Ruff check the instruction needs on this response, if any (cheap)."""
    verifier = check.verifier
    if verifier.kind != "ruff" or verifier.scope != "code":
        return None
    problem = response.encoding_problem()
    if problem is not None:
        check.result = _result(check, f"does not parse ({problem})")
        return None
    try:
        key = (check.spec.id, tuple(sorted(check.params.items())))
        needs = cache.get(key)
    except TypeError:  # unhashable parameter values: no caching
        key, needs = None, None
    if needs is None:
        settings = resolve_settings(check.spec, check.params, verifier)
        frozen = RuffConfig.build((), verifier.preview, settings).settings
        needs = (tuple(verifier.select), frozen)
        if key is not None:
            cache[key] = needs
    return RuffCheck(0, check.item, needs[0], verifier.preview, needs[1])


def _python_part(check: _Check, response: _Response) -> None:
    """Run the instruction's Python check; set its result when that decides it.

    Response checks and pure Python checks are decided here; a Python check beside Ruff
    (library_2) either decides (the code does not parse) or adds its reasons to Ruff's.
    """
    verifier = check.verifier
    if check.result is not None:
        return
    if verifier.scope == "response":
        if verifier.check not in RESPONSE_CHECKS:
            check.result = _error(check, f"unknown response check {verifier.check!r}")
        else:
            check.result = _result(check, RESPONSE_CHECKS[verifier.check](response.text))
        return
    if not verifier.check:
        return
    code_check = CODE_CHECKS.get(verifier.check)
    if code_check is None:
        check.result = _error(check, f"unknown code check {verifier.check!r}")
        return
    relevant = code_check.relevant is None or code_check.relevant(response.code)
    if not relevant and verifier.kind == "ruff":
        return  # passes; Ruff still reports code that does not parse
    tree, problem = response.parse()
    if tree is None:
        if verifier.kind == "ruff":
            check.python_problem = problem  # Ruff decides whether the code parses
        else:
            check.result = _result(check, f"does not parse ({problem})")
        return
    try:
        reason = code_check.run(response.code, tree) if relevant else None
    except CheckUndetermined as exc:
        check.result = _error(check, str(exc))
        return
    if reason:
        check.extra_reasons.append(reason)
    if verifier.kind != "ruff":
        check.result = _result(check, reason)


def _ruff_result(check: _Check, outcome: RuffOutcome) -> CheckResult:
    if isinstance(outcome, RuffRunError):
        return _error(check, f"ruff error: {outcome}")
    unattributed = [d for d in outcome if not d.is_rule]
    syntax = [d for d in unattributed if d.is_syntax_error]
    if syntax:
        return _result(check, f"does not parse (Ruff: {syntax[0].describe()})")
    if check.python_problem is not None:
        return _error(check, (
            f"Ruff parses the code but this Python does not ({check.python_problem}), so "
            f"its {check.verifier.check} part cannot be checked"
        ))
    if not outcome:
        return _result(check, "; ".join(check.extra_reasons) or None)
    if unattributed:
        return _error(check, f"ruff reported: {unattributed[0].describe()}")
    found = join_reasons([d.describe() for d in outcome])
    return _result(check, "; ".join([found, *check.extra_reasons]))


def _result(check: _Check, failure: str | None) -> CheckResult:
    status = "fail" if failure else "pass"
    return CheckResult(id=check.spec.id, params=check.params, status=status, reason=failure or "")


def _error(check: _Check, reason: str) -> CheckResult:
    return CheckResult(id=check.spec.id, params=check.params, status="error", reason=reason)
