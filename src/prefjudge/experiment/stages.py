"""Run one stage of an experiment through its use case, keeping what it returns.

:class:`StageRunner` calls each stage's use case (``augment_file``, ``generate_file``,
``score_file``, ``judge_file``, ``rank_file`` ...) with the stage's typed settings and
the backend from the run's pool, and keeps the facts the stages after it need
(:class:`~prefjudge.experiment.outcomes.Held`): the leaderboard is built from them, not
from the files those stages wrote. The steps done here (merges, the original answers of
the persona stages, the leaderboard) are here too.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefjudge.backends import Backend, BackendError
from prefjudge.backends.pool import BackendPool
from prefjudge.experiment import leaderboard
from prefjudge.experiment.config import Experiment
from prefjudge.experiment.judge_rounds import judge_in_rounds
from prefjudge.experiment.outcomes import Held, leaderboard_facts
from prefjudge.experiment.plan import JudgePair, Stage, original_answers
from prefjudge.experiment.resume import journal_records, verdict_failed
from prefjudge.experiment.tables import judge_table, leaderboard_table
from prefjudge.judge.run import AllPairsWaiting, JudgeFileSettings, judge_file
from prefjudge.persona.run import compare_files, rewrite_file
from prefjudge.ranking.run import correlate_file, rank_file, rank_tables
from prefjudge.reporting import Reporter, StageError
from prefjudge.scoring.run import score_file
from prefjudge.testbed.augment.run import augment_file
from prefjudge.testbed.generation import generate_file
from prefjudge.testbed.report_run import report_file
from prefjudge.view.run import view_folder

Extra = dict[str, Any]
"""What the manifest adds for a stage (the rounds' log, the pairs waiting)."""


@dataclass
class StageRunner:
    """Runs the stages of one experiment, in order, keeping their outcomes.

    Attributes:
        experiment: The experiment.
        pool: The run's model backends (each distinct one opened once).
        reporter: Where notes, warnings and tables go.
        retry_errors: Make the failed model requests of each stage again.
        held: What the stages run so far returned (for the leaderboard).
    """

    experiment: Experiment
    pool: BackendPool
    reporter: Reporter
    retry_errors: bool = False
    held: Held = field(default_factory=Held)

    def run(self, stage: Stage) -> Extra:
        """Run one stage; return what the manifest adds for it.

        Raises:
            StageError: The stage cannot go on (its records written are kept).
        """
        return _STEPS[stage.kind](self, stage) or {}

    def backend(self, stage: Stage | JudgePair) -> Backend | None:
        """The stage's model backend from the pool (None when it asks no model)."""
        if stage.backend is None:
            return None
        try:
            return self.pool.get(stage.backend)
        except BackendError as exc:
            raise StageError(str(exc)) from exc

    def model(self, stage: Stage) -> Backend:
        """The backend of a stage that asks a model."""
        backend = self.backend(stage)
        if backend is None:  # pragma: no cover - the plan gives every model stage a backend
            raise StageError("this stage needs a model backend")
        return backend

    def augment(self, stage: Stage) -> None:
        """Augment the benchmark's tasks (``augment_file``)."""
        augment_file(stage.settings, self.backend(stage), self.reporter)

    def generate(self, stage: Stage) -> None:
        """One model's generations (``generate_file``), its failed ones again on request."""
        settings = dataclasses.replace(stage.settings, retry_errors=self.retry_errors)
        generate_file(settings, self.model(stage), self.reporter)

    def score(self, stage: Stage) -> None:
        """Score one model's generations (``score_file``); keep its summary."""
        self.held.scored(score_file(stage.settings, self.reporter))

    def judge(self, stage: Stage) -> Extra:
        """Judge one model pair (``judge_file``); keep its verdicts."""
        settings = dataclasses.replace(stage.settings, retry_errors=self.retry_errors)
        return {"pairs_waiting": self.judge_file(settings, self.backend(stage))}

    def judge_rounds(self, stage: Stage) -> Extra:
        """The rounds of suggested pairs (``[judge] strategy = "suggest"``)."""
        assert stage.rounds is not None  # the plan gives every rounds stage its rounds
        waiting: dict[str, int] = {}

        def judge_pair(pair: JudgePair, limit: int) -> None:
            again = dataclasses.replace(pair.settings, limit=limit,
                                        retry_errors=self.retry_errors)
            waiting[pair.output.name] = self.judge_file(again, self.backend(pair))

        rounds = judge_in_rounds(stage.rounds, judge_pair, self.reporter)
        return {"rounds": rounds, "pairs_waiting": sum(waiting.values())}

    def judge_file(self, settings: JudgeFileSettings, backend: Backend | None) -> int:
        """Judge one model pair's verdict file; return its pairs waiting on failed generations."""
        try:
            outcome = judge_file(settings, backend, self.reporter)
        except AllPairsWaiting as exc:  # nothing to judge yet: the run goes on without them
            self.reporter.warn(f"warning: {exc}")
            self.held.judged(settings, None)
            return exc.waiting
        self.held.judged(settings, outcome)
        return outcome.waiting

    def merge(self, stage: Stage) -> None:
        """Concatenate the stage's inputs (every model's scores) into its output."""
        self.reporter.note(f"{_merge(stage.inputs, stage.output)[0]} records → {stage.output}")

    def merge_battles(self, stage: Stage) -> None:
        """Every verdict file into the battles (failed verdicts left out)."""
        lines, dropped = _merge(stage.inputs, stage.output, leave_out_errors=True)
        failed = f" ({dropped} failed verdicts left out: errors, not battles)" if dropped else ""
        self.reporter.note(f"{lines} battles → {stage.output}{failed}")

    def rank(self, stage: Stage) -> None:
        """Rank the battles (``rank_file``); keep the ratings (none without battles)."""
        settings = stage.settings
        if not journal_records(settings.battles):
            for path in (settings.output, settings.json_path, settings.plot_path):
                if path is not None:
                    path.unlink(missing_ok=True)  # no ratings of an earlier run stay
            self.reporter.warn("rank: no battles yet (every verdict failed or waits): no ratings")
            self.held.ranked(settings, None)
            return
        outcome = rank_file(settings, self.reporter)
        self.held.ranked(settings, outcome)
        for table in rank_tables(settings, outcome):
            self.reporter.table(table)

    def correlate(self, stage: Stage) -> None:
        """Correlate the scores with an Elo file (``correlate_file``)."""
        correlate_file(stage.settings, self.reporter)

    def report(self, stage: Stage) -> None:
        """The HTML report (``report_file``)."""
        report_file(stage.settings, self.reporter)

    def view(self, stage: Stage) -> None:
        """The viewer page of the results folder (``view_folder``)."""
        view_folder(stage.settings, self.reporter)

    def persona_rewrite(self, stage: Stage) -> None:
        """Rewrite the tasks in a persona's words (``rewrite_file``)."""
        rewrite_file(stage.settings, self.model(stage), self.reporter)

    def persona_compare(self, stage: Stage) -> None:
        """Compare two models on a persona's tasks (``compare_files``)."""
        compared = compare_files(stage.settings, self.model(stage), self.reporter)
        self.reporter.note(compared.message)
        if compared.flips is not None:
            self.reporter.table(compared.flips.table)
            self.reporter.note(compared.flips.message)

    def persona_originals(self, stage: Stage) -> None:
        """Each model's answers to the original prompts of the kept tasks."""
        tasks, *generations = stage.inputs
        for model, gens in zip(self.experiment.models, generations, strict=True):
            kept = original_answers(tasks, gens, stage.output / f"{model.slug()}.jsonl")
            self.reporter.note(f"{model.name}: {kept} answers to the original prompts")

    def leaderboard(self, stage: Stage) -> None:
        """The merged leaderboard, from what the stages of this run returned."""
        experiment, root = self.experiment, stage.output.parent
        alpha = experiment.rank.composite_alpha
        facts = leaderboard_facts(experiment, root, self.held)
        rows = leaderboard.rows_of([model.name for model in experiment.models], facts, alpha)
        judge_rows = leaderboard.judge_rows(facts.verdicts)
        paths = leaderboard.write(rows, root, alpha, judge_rows)
        self.reporter.table(leaderboard_table(rows, alpha))
        if judge_rows:
            self.reporter.table(judge_table(judge_rows))
        self.reporter.note("wrote " + ", ".join(str(path.relative_to(root)) for path in paths))


_STEPS: dict[str, Callable[[StageRunner, Stage], Extra | None]] = {
    "augment": StageRunner.augment,
    "generate": StageRunner.generate,
    "score": StageRunner.score,
    "judge": StageRunner.judge,
    "judge-rounds": StageRunner.judge_rounds,
    "merge-scores": StageRunner.merge,
    "merge-battles": StageRunner.merge_battles,
    "rank": StageRunner.rank,
    "correlate": StageRunner.correlate,
    "report": StageRunner.report,
    "view": StageRunner.view,
    "persona-rewrite": StageRunner.persona_rewrite,
    "persona-compare": StageRunner.persona_compare,
    "persona-originals": StageRunner.persona_originals,
    "leaderboard": StageRunner.leaderboard,
}
"""Each stage kind's step (:attr:`prefjudge.experiment.plan.Stage.kind`)."""


def _merge(inputs: list[Path], output: Path, *, leave_out_errors: bool = False
           ) -> tuple[int, int]:
    """Concatenate JSONL files (in order) into ``output``, atomically.

    Args:
        inputs: The files (missing ones are skipped).
        output: The merged file.
        leave_out_errors: Leave out the verdicts in error
            (:func:`~prefjudge.experiment.resume.verdict_failed`: a failed verdict is
            no battle); only lines that mention ``"error"`` are parsed.

    Returns:
        The lines written and the lines left out.
    """
    lines = dropped = 0
    tmp = output.with_name(output.name + ".tmp")
    with tmp.open("wb") as out:
        for path in inputs:
            if not path.exists():
                continue
            with path.open("rb") as handle:
                for line in handle:
                    if not line.strip():
                        continue
                    if leave_out_errors and b'"error"' in line and _is_error(line):
                        dropped += 1
                        continue
                    out.write(line if line.endswith(b"\n") else line + b"\n")
                    lines += 1
    os.replace(tmp, output)
    return lines, dropped


def _is_error(line: bytes) -> bool:
    """Whether a JSONL line is a verdict in error."""
    try:
        record = json.loads(line)
    except ValueError:
        return False  # not this step's to judge: rank names the line
    return isinstance(record, dict) and verdict_failed(record)


__all__ = ["StageRunner"]
