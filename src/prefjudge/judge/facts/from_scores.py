"""Facts the score stage already found: a side's test outcome and instruction checks, reused.

``prefjudge score`` runs every generation's unit tests and instruction checks once; the
evidence judge (``judge --scores FILE``, and ``run``, which gives each judge stage its two
models' score files) takes a side's results from its score record instead of finding them
again, and finds only what is missing. A result is reused only when it is the one the judge
would find itself, so verdicts equal those judged without scores (and the verdict journal
does not bind the score files: a verdict file resumes with or without them). The rule:

- **The record.** A pair side is matched to a record of the same ``task_id`` and ``model``
  with the join fields the pair carries (``protocol``, ``k``, ``sample``:
  :func:`~prefjudge.judge.pairs.join.join_values`), whose response has the same SHA-256 and
  whose ``response_is_code`` is the same. A failed generation (``status: "error"``) or no
  such record: found here, as without scores.
- **Test outcomes** (``func``) are reused when the record's file was written by ``score``
  with tests on (its journal binding, ``<file>.journal.json``), under this prefjudge's sandbox
  harness (the same digest), with the judge's limits (``--test-timeout`` and ``--memory-mb``
  unset: the task format's own harness limits, as the judge runs), from task files that are
  all among the judge's ``--tests`` files (by content: the task of the pair is then the one
  the judge runs; a hub dataset or folder among the score's tasks gives no test outcome),
  when the code its tests ran is the code the judge runs
  (:func:`~prefjudge.judge.facts.correctness.response_code`: the score's profile may find
  another code block), and when the outcome is no ``error`` (the harness's or the
  environment's: tried again here). A merged score file (no binding) gives none.
- **Instruction checks** (``instruction_results``) are reused when the record was checked
  under the judge's verification profile (``meta.profile``; ``score``'s default is
  ``reference``, the judge's ``strict``: then they are checked here), with the same Ruff
  (``meta.ruff_version``), on the pair's own instructions (same ids and resolved
  parameters, in order), reading the same code, and when no check ended in ``error``.

Each fact records where it came from (:attr:`~prefjudge.records.Fact.source`): empty when
both sides were found here, else ``A: scores <file>; B: judged here`` and the like.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from prefjudge.io import read_records
from prefjudge.journal import file_fingerprint, read_binding
from prefjudge.judge.facts.correctness import response_code
from prefjudge.judge.facts.provenance import HERE, Known, fact_source
from prefjudge.records import CheckResult, FuncResult, InstructionRef, Pair, ScoredSample
from prefjudge.sandbox import SandboxLimits
from prefjudge.scoring.verify.extract import code_of

SideName = Literal["A", "B"]


def response_sha(text: str) -> str:
    """The SHA-256 of a response's text (how a side is matched to its record)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _resolved(refs: Sequence[InstructionRef]) -> list[tuple[str, dict[str, Any]]] | None:
    """Instruction ids with their resolved parameters (None when any cannot be resolved)."""
    from prefjudge.scoring.taxonomy import check_params

    out = []
    for ref in refs:
        checked = check_params(ref.id, ref.params)
        if checked.problems:
            return None
        out.append((ref.id, dict(checked.params)))
    return out


@dataclass(frozen=True)
class _Entry:
    """What a score record tells about one generation (its text only as a digest)."""

    model: str
    joins: dict[str, Any]
    sha: str
    is_code: bool
    profile: str
    ruff: str
    instructions: tuple[InstructionRef, ...]
    checks: tuple[CheckResult, ...]
    func: FuncResult | None


@dataclass(frozen=True)
class _TestsValid:
    """What a score file's journal binding says about its test outcomes."""

    tests: bool = False
    harness: str = ""
    timeout_s: Any = None
    memory_mb: Any = None
    task_files: tuple[str, ...] = ()
    task_sources: bool = False


def _binding(path: Path) -> _TestsValid:
    """The test conditions of a score file (all off without a readable ``score`` binding)."""
    data = read_binding(path)
    if data is None or data.get("stage") != "score":
        return _TestsValid()
    settings = data.get("settings") or {}
    tasks = (data.get("inputs") or {}).get("tasks") or []
    return _TestsValid(
        tests=settings.get("tests") is True,
        harness=str(settings.get("harness") or ""),
        timeout_s=settings.get("timeout_s"),
        memory_mb=settings.get("memory_mb"),
        task_files=tuple(str(f.get("sha256")) for f in tasks if isinstance(f, dict)),
        task_sources=bool(settings.get("tasks_sources")),
    )


def _same_limits(valid: _TestsValid, limits: SandboxLimits) -> bool:
    """Whether a score's tests ran under ``limits`` (unset there: the format's harness's)."""
    if "cpu_s" not in limits.unset:  # score sets no CPU limit of its own
        return False
    for name, bound in (("timeout_s", valid.timeout_s), ("memory_mb", valid.memory_mb)):
        given = name not in limits.unset
        if (bound is not None) != given or (given and getattr(limits, name) != bound):
            return False
    return True


@dataclass
class ScoreFacts:
    """Results of ``prefjudge score`` outputs, looked up by pair side (see the module docstring).

    Attributes:
        files: The score files read, in order.
        test_files: Content digests of the judge's ``--tests`` files.
    """

    files: tuple[Path, ...] = ()
    test_files: frozenset[str] = frozenset()
    _entries: dict[tuple[str, str], list[tuple[_Entry, int]]] = field(default_factory=dict)
    _valid: list[_TestsValid] = field(default_factory=list)
    _harness: str = ""
    _ruff: str = ""

    @classmethod
    def load(cls, paths: Sequence[str | os.PathLike[str]],
             tests: Sequence[str] = ()) -> ScoreFacts:
        """Read score files (any models; merged or one per model).

        Args:
            paths: ``prefjudge score`` outputs.
            tests: The judge's ``--tests`` sources (their files are compared by content).

        Returns:
            The lookup.

        Raises:
            InputError: When a file cannot be read or holds an invalid line.
        """
        from prefjudge.judge.pairs.join import join_values  # the package imports the judge
        from prefjudge.sandbox import harness_digest
        from prefjudge.scoring.verify import ruff_version

        files = tuple(Path(p) for p in paths)
        test_files = frozenset(file_fingerprint(s)["sha256"] for s in tests if Path(s).is_file())
        facts = cls(files, test_files, _harness=harness_digest(), _ruff=ruff_version())
        for number, path in enumerate(files):
            facts._valid.append(_binding(path))
            records, _ = read_records(path, ScoredSample)
            for _, rec in records:
                if rec.status == "error":
                    continue  # a failed generation: nothing of it was checked or tested
                facts._entries.setdefault((rec.task_id, rec.model), []).append((_Entry(
                    model=rec.model, joins=join_values(rec), sha=response_sha(rec.response),
                    is_code=rec.response_is_code, profile=str(rec.meta.get("profile", "")),
                    ruff=str(rec.meta.get("ruff_version", "")),
                    instructions=tuple(rec.instructions),
                    checks=tuple(rec.instruction_results), func=rec.func), number))
        return facts

    def _record(self, pair: Pair, side: SideName) -> tuple[_Entry, int] | None:
        """The score record of one side of ``pair``, matched exactly (or None)."""
        from prefjudge.judge.pairs.join import join_values

        model = pair.model_a if side == "A" else pair.model_b
        response = pair.response_a if side == "A" else pair.response_b
        wanted, sha = join_values(pair), response_sha(response)
        for entry, number in self._entries.get((pair.task_id, model), []):
            if (entry.sha == sha and entry.is_code == pair.is_code(side)
                    and all(entry.joins.get(k) == v for k, v in wanted.items())):
                return entry, number
        return None

    def _same_code(self, pair: Pair, side: SideName, entry: _Entry) -> bool:
        """Whether the record's profile found the code the judge runs and checks."""
        response = pair.response_a if side == "A" else pair.response_b
        return code_of(response, entry.profile or None, is_code=entry.is_code) == response_code(
            pair, side)

    def test_result(self, pair: Pair, side: SideName,
                    limits: SandboxLimits | None = None) -> Known | None:
        """A side's test outcome from its score record, when valid for the judge.

        Args:
            pair: The pair (its task's tests are the judge's to run).
            side: ``A`` or ``B``.
            limits: The judge's sandbox limits (default: the harness's).

        Returns:
            The outcome and its source, or None to run the tests here.
        """
        found = self._record(pair, side)
        if found is None:
            return None
        entry, number = found
        valid, limits = self._valid[number], limits or SandboxLimits()
        if (entry.func is None or entry.func.status == "error" or not valid.tests
                or valid.harness != self._harness or valid.task_sources
                or not valid.task_files or not set(valid.task_files) <= self.test_files
                or not _same_limits(valid, limits) or not self._same_code(pair, side, entry)):
            return None
        return Known(entry.func, f"scores {self.files[number].name}")

    def check_results(self, pair: Pair, side: SideName, profile: str) -> Known | None:
        """A side's instruction check results from its score record, when valid for the judge.

        Args:
            pair: The pair (its ``instructions`` are checked).
            side: ``A`` or ``B``.
            profile: The judge's verification profile.

        Returns:
            The results (one per instruction, in order) and their source, or None to
            check here.
        """
        found = self._record(pair, side)
        if found is None or not pair.instructions:
            return None
        entry, number = found
        if (entry.profile != profile or entry.ruff != self._ruff
                or len(entry.checks) != len(pair.instructions)
                or any(check.status == "error" for check in entry.checks)):
            return None
        mine = _resolved(pair.instructions)
        if mine is None or mine != _resolved(entry.instructions):
            return None
        if [(c.id, dict(c.params)) for c in entry.checks] != mine:
            return None
        if not self._same_code(pair, side, entry):
            return None
        return Known(list(entry.checks), f"scores {self.files[number].name}")


KnownSides = Mapping[tuple[str, str, str], Known]
"""Results found beforehand, by ``(pair_id, side, "tests" | "checks")``: what a Ray shard
carries (looked up on the driver by :func:`known_sides`)."""


def known_sides(scores: ScoreFacts, pairs: Sequence[Pair], *, profile: str,
                limits: SandboxLimits | None = None) -> dict[tuple[str, str, str], Known]:
    """Every result of ``pairs`` the score files give, by ``(pair_id, side, what)``.

    Args:
        scores: The score files.
        pairs: The pairs.
        profile: The judge's verification profile.
        limits: The judge's sandbox limits.

    Returns:
        ``what`` is ``tests`` or ``checks``; sides the files do not give are absent.
    """
    out: dict[tuple[str, str, str], Known] = {}
    for pair in pairs:
        for side in ("A", "B"):
            found = scores.test_result(pair, side, limits)  # type: ignore[arg-type]
            if found is not None:
                out[(pair.pair_id, side, "tests")] = found
            checks = scores.check_results(pair, side, profile)  # type: ignore[arg-type]
            if checks is not None:
                out[(pair.pair_id, side, "checks")] = checks
    return out


__all__ = ["HERE", "Known", "KnownSides", "ScoreFacts", "fact_source",
           "known_sides", "response_sha"]
