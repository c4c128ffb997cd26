"""From an experiment to its stages: which use case runs, with what settings, into which file.

Each stage is the use case of one ``prefjudge`` command (``augment_file``,
``generate_file``, ``score_file``, ``judge_file`` ...: the same journals, resume and locks
as when the command is run by hand) with typed settings, writing into the results
folder::

    results/<experiment>/
      manifest.json              versions, hashes and settings of every stage
      augmented.jsonl            augment
      generations/<model>.jsonl  generate, one file per model
      scores/<model>.jsonl       score (+ .summary.json), one file per model
      scores.jsonl               every model's scores, merged (report, correlate)
      judgments/<a>__<b>.jsonl   judge, one file per model pair (with [judge] strategy =
                                 "suggest": round 0, then rounds raising --limit on the
                                 pairs worth judging next)
      battles.jsonl              every verdict, merged (rank)
      ratings.csv/.json/.png     rank
      correlation.csv/.json      correlate (when an Elo file is given)
      report.html                report
      leaderboard.csv/.json/.png the merged leaderboard
      view.html                  every sample and verdict, filterable (prefjudge view)
      cache.sqlite               the experiment's response cache

``<model>`` is the model's name and a hash of its settings, so changing one model makes
new files for it (and for its pairs) and leaves the others to be resumed as they are.

The judge stages are planned by :mod:`.judge_plan`, the persona stages by
:mod:`.persona_plan`; a stage is a :class:`~.plan_stage.Stage` (re-exported here, with
the judge's :class:`JudgePair` and :class:`JudgeRounds`, :func:`stage_backend` and
:func:`original_answers`).
"""

from __future__ import annotations

from pathlib import Path

from prefjudge.backends.base import Sampling
from prefjudge.experiment.config import Experiment
from prefjudge.experiment.judge_plan import JudgeFiles, JudgePair, JudgeRounds, judge_stages
from prefjudge.experiment.persona_plan import original_answers, persona_stages
from prefjudge.experiment.plan_stage import Stage
from prefjudge.experiment.stage_backend import model_backend, stage_backend
from prefjudge.judge.run import JudgingEngine
from prefjudge.ranking.run import CorrelateSettings, RankSettings
from prefjudge.scoring.run import ScoreSettings, ScoringEngine
from prefjudge.scoring.sources import resolve_source
from prefjudge.testbed.augment.run import SELECTOR_SAMPLING, AugmentSettings
from prefjudge.testbed.generation import GenerateSettings
from prefjudge.testbed.protocols import PROTOCOLS
from prefjudge.testbed.report_run import ReportSettings
from prefjudge.view.run import ViewSettings

__all__ = [
    "JudgePair",
    "JudgeRounds",
    "Stage",
    "benchmark_source",
    "build_plan",
    "generation_requests",
    "generations_per_model",
    "original_answers",
    "parse_ks",
    "resolve",
    "stage_backend",
]


def parse_ks(text: str) -> list[int]:
    """``"0..3"``, ``"2"`` or ``"0,2,3"`` as a sorted list of k values."""
    from prefjudge.testbed.protocols import parse_k

    return parse_k(text)


def generation_requests(experiment: Experiment, n_tasks: int) -> int:
    """Requests ``generate`` sends per model (identical requests in a round go once)."""
    ks = parse_ks(experiment.generate.ks)
    protocols = set(experiment.generate.protocols)
    per_task = 0
    if "single" in protocols:
        per_task += len(ks)
    if "multi" in protocols:
        per_task += max(ks) + 1
        if "single" in protocols and 0 in ks:
            per_task -= 1  # single-turn and multi-turn k = 0 are the same request
    return n_tasks * per_task * experiment.generate.samples


def generations_per_model(experiment: Experiment, n_tasks: int) -> int:
    """Generation records per model: tasks x protocols x k values x samples."""
    ks = parse_ks(experiment.generate.ks)
    return n_tasks * len(experiment.generate.protocols) * len(ks) * experiment.generate.samples


def resolve(base: Path, value: str) -> str:
    """A path in the experiment file, relative to it; a hub name as it is."""
    candidate = (base / value).expanduser()
    return str(candidate) if candidate.exists() or "/" not in value.strip("./") else value


def benchmark_source(base: Path, value: str) -> str:
    """``[benchmark] source`` as the stages are given it: the rule of ``score --tasks``.

    :func:`prefjudge.scoring.sources.resolve_source` with paths relative to the experiment
    file: a file or folder beside it (its full path), else ``hub:OWNER/NAME`` or a known hub
    id or alias (``humanevalplus``, as it is).

    Raises:
        UnknownSourceError: When it names none of them (a misspelt name: the close known
            names; a path: no such file or folder).
    """
    target = resolve_source(value, "tasks", base=base)
    return str(target) if isinstance(target, Path) else value


def build_plan(
    experiment: Experiment,
    base: Path,
    n_tasks: int,
    score_engine: ScoringEngine | None = None,
    judge_engine: JudgingEngine | None = None,
) -> tuple[Path, list[Stage]]:
    """Every stage of ``experiment``, in order, and its results folder.

    Args:
        experiment: The checked experiment file.
        base: The folder relative paths of the file are relative to.
        n_tasks: Tasks of the benchmark slice (for request counts).
        score_engine: Where the score stages run (None: this machine).
        judge_engine: Where the judge stages of ``evidence``/``hybrid`` find their facts
            (None: this machine).
    """
    root = (base / experiment.experiment.results / experiment.experiment.name).resolve()
    cache = root / "cache.sqlite"
    augmented = root / "augmented.jsonl"
    stages = [_augment_stage(experiment, base, augmented, cache, n_tasks)]
    gen_files = _generate_stages(experiment, root, augmented, cache, n_tasks, stages)
    score_files = _score_stages(experiment, root, augmented, gen_files, score_engine, stages)
    merged_scores = root / "scores.jsonl"
    stages.append(
        Stage("merge-scores", "merge scores", merged_scores, inputs=list(score_files.values()))
    )
    judgment_files: list[Path] = []
    if experiment.judge is not None and len(experiment.models) > 1:
        guidance = experiment.judge.guidance
        files = JudgeFiles(root, cache, augmented, gen_files, score_files,
                           guidance=Path(resolve(base, guidance)) if guidance else None)
        per_model = generations_per_model(experiment, n_tasks)
        judgment_files = judge_stages(experiment, files, per_model, judge_engine, stages)
        stages += _rank_stages(experiment, root, judgment_files)
    if experiment.correlate is not None:
        stages.append(_correlate_stage(experiment, base, root, merged_scores))
    if experiment.personas is not None:
        stages += persona_stages(experiment, root, augmented, gen_files, n_tasks, cache)
    stages += _closing_stages(experiment, root, merged_scores,
                              [*score_files.values(), *judgment_files])
    return root, stages


def _augment_stage(
    experiment: Experiment, base: Path, augmented: Path, cache: Path, n_tasks: int
) -> Stage:
    """The augment stage: the benchmark slice with instructions added."""
    bench = experiment.benchmark
    spec = experiment.augment
    augment_backend, sampling = None, Sampling(**SELECTOR_SAMPLING)
    augment_requests = 0
    if spec.selector == "llm":
        augment_backend = stage_backend(spec, cache, max_tokens=spec.max_tokens, seed=spec.seed)
        sampling = augment_backend.sampling(**SELECTOR_SAMPLING)
        augment_requests = n_tasks  # one choice per task; a reply that needs repair asks again
    augment = AugmentSettings(
        source=benchmark_source(base, bench.source),
        output=augmented,
        selector=spec.selector,
        k=spec.k,
        seed=spec.seed,
        limit=bench.limit,
        split=bench.split or None,
        subset=bench.subset or None,
        sampling=sampling,
    )
    return Stage(
        "augment",
        "augment",
        augmented,
        augment,
        augment_backend,
        requests=augment_requests,
        records=n_tasks,
        bound="≥" if augment_requests else "",
    )


def _generate_stages(
    experiment: Experiment,
    root: Path,
    augmented: Path,
    cache: Path,
    n_tasks: int,
    stages: list[Stage],
) -> dict[str, Path]:
    """Add each model's generate stage to ``stages``; return the generation files by model."""
    gen_files: dict[str, Path] = {}
    chosen = experiment.generate.protocols
    protocols = PROTOCOLS if len(set(chosen)) > 1 else (chosen[0],)
    ks = tuple(parse_ks(experiment.generate.ks))
    for model in experiment.models:
        gens = root / "generations" / f"{model.slug()}.jsonl"
        gen_files[model.name] = gens
        backend = model_backend(experiment, model, cache)
        settings = GenerateSettings(
            augmented=augmented,
            output=gens,
            protocols=protocols,
            ks=ks,
            samples=experiment.generate.samples,
            model_name=model.name,
            sampling=backend.sampling(),
        )
        stages.append(
            Stage(
                "generate",
                f"generate {model.name}",
                gens,
                settings,
                backend,
                requests=generation_requests(experiment, n_tasks),
                records=n_tasks * len(protocols) * len(ks) * settings.samples,
            )
        )
    return gen_files


def _score_stages(
    experiment: Experiment,
    root: Path,
    augmented: Path,
    gen_files: dict[str, Path],
    score_engine: ScoringEngine | None,
    stages: list[Stage],
) -> dict[str, Path]:
    """Add each model's score stage to ``stages``; return the score files by model."""
    score_files: dict[str, Path] = {}
    for model in experiment.models:
        scores = root / "scores" / f"{model.slug()}.jsonl"
        score_files[model.name] = scores
        stages.append(
            Stage(
                "score",
                f"score {model.name}",
                scores,
                ScoreSettings(
                    gen_files[model.name],
                    output=scores,
                    tasks=(str(augmented),),
                    ci_seed=experiment.experiment.seed,
                    engine=score_engine,
                ),
            )
        )
    return score_files


def _rank_stages(experiment: Experiment, root: Path, judgment_files: list[Path]) -> list[Stage]:
    """Merge every verdict into the battles, and rank them."""
    battles = root / "battles.jsonl"
    rank = experiment.rank
    return [
        Stage("merge-battles", "merge battles", battles, inputs=judgment_files),
        Stage(
            "rank",
            "rank",
            root / "ratings.csv",
            RankSettings(
                battles,
                output=root / "ratings.csv",
                json_path=root / "ratings.json",
                plot_path=root / "ratings.png",
                ties=rank.ties,
                alpha=rank.alpha,
                n_resamples=rank.bootstrap,
                seed=experiment.experiment.seed,
            ),
        ),
    ]


def _correlate_stage(experiment: Experiment, base: Path, root: Path, merged_scores: Path) -> Stage:
    """Correlate the composite with the experiment's Elo file."""
    correlate = experiment.correlate
    assert correlate is not None
    return Stage(
        "correlate",
        "correlate",
        root / "correlation.csv",
        CorrelateSettings(
            merged_scores,
            elo=Path(resolve(base, correlate.elo)),
            output=root / "correlation.csv",
            json_path=root / "correlation.json",
            elo_model_col=correlate.elo_model_col or None,
            elo_col=correlate.elo_col or "rating",
        ),
    )


def _closing_stages(
    experiment: Experiment, root: Path, merged_scores: Path, leaderboard_inputs: list[Path]
) -> list[Stage]:
    """The report, the leaderboard and the view, last."""
    title = f"prefjudge — {experiment.experiment.name}"
    return [
        Stage(
            "report",
            "report",
            root / "report.html",
            ReportSettings(
                merged_scores,
                output=root / "report.html",
                n_resamples=experiment.report.bootstrap,
                seed=experiment.experiment.seed,
                title=title,
                source_name=str(merged_scores),
            ),
        ),
        Stage("leaderboard", "leaderboard", root / "leaderboard.csv", inputs=leaderboard_inputs),
        Stage("view", "view", root / "view.html",
              ViewSettings(root, output=root / "view.html", title=title)),
    ]
