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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from prefjudge.backends.base import Sampling
from prefjudge.backends.config import BackendConfig
from prefjudge.experiment.config import BackendSpec, Experiment, ModelSpec
from prefjudge.judge import MethodTraits, method_traits
from prefjudge.judge.run import JudgeFileSettings, JudgingEngine
from prefjudge.judge.settings import JUDGE_SAMPLING
from prefjudge.persona.run import (
    COMPARE_SAMPLING,
    REWRITE_SAMPLING,
    CompareSettings,
    RewriteSettings,
)
from prefjudge.ranking.run import CorrelateSettings, RankSettings
from prefjudge.records import generation_failed
from prefjudge.scoring.run import ScoreSettings, ScoringEngine
from prefjudge.scoring.sources import resolve_source
from prefjudge.testbed.augment.run import SELECTOR_SAMPLING, AugmentSettings
from prefjudge.testbed.generation import GenerateSettings
from prefjudge.testbed.protocols import PROTOCOLS
from prefjudge.testbed.report_run import ReportSettings
from prefjudge.view.run import ViewSettings


@dataclass
class Stage:
    """One step of an experiment.

    Attributes:
        kind: ``augment``, ``generate``, ``score``, ``merge-scores``, ``judge``,
            ``judge-rounds``, ``merge-battles``, ``rank``, ``correlate``, ``report``,
            ``leaderboard``, ``view``, ``persona-rewrite``, ``persona-originals``,
            ``persona-compare``.
        label: What the progress display calls it.
        output: The file it writes.
        settings: The typed settings of the stage's use case (``AugmentSettings``,
            ``GenerateSettings``, ``ScoreSettings``, ``JudgeFileSettings``, ...); None for
            the steps done here (merges, original answers, leaderboard, rounds).
        backend: The model backend it asks (None: no model); ``run`` opens each distinct
            backend once (:class:`prefjudge.backends.pool.BackendPool`).
        requests: Model requests a fresh run of it makes.
        records: Records its output holds once done, that ``requests`` make (for what is
            left of it: :func:`prefjudge.experiment.progress.requests_left`).
        bound: ``""`` when ``requests`` is exact, ``"≥"`` when it is a lower bound (the
            judge's refinement depends on ties, a rewrite may be tried again), ``"≤"``
            when an upper bound (persona stages run on the rewrites that were accepted;
            the judging budget of suggested rounds), ``"about"`` when neither.
        inputs: Files it reads (merge steps).
        rounds: The suggested rounds (``judge-rounds`` only).
    """

    kind: str
    label: str
    output: Path
    settings: Any = None
    backend: BackendConfig | None = None
    requests: int = 0
    records: int = 0
    bound: str = ""
    inputs: list[Path] = field(default_factory=list)
    rounds: JudgeRounds | None = None


@dataclass(frozen=True, eq=False)  # each model pair's own: hashed by identity
class JudgePair:
    """One model pair's judging, for the rounds of ``strategy = "suggest"``.

    Attributes:
        model_a: The first model's name (as its verdicts name it).
        model_b: The second model's name.
        output: Its verdict file.
        settings: Its judging settings without ``limit`` (each round raises the limit;
            the judge resumes, so only the new pairs are judged).
        backend: The judge model (None for a method that asks none).
    """

    model_a: str
    model_b: str
    output: Path
    settings: JudgeFileSettings
    backend: BackendConfig | None = None


@dataclass(frozen=True)
class JudgeRounds:
    """The rounds after round 0 of ``[judge] strategy = "suggest"``.

    Attributes:
        budget: Judgments in all, round 0 included (capped by what the pairs allow).
        rounds: Rounds after round 0.
        seeded: Judgments of round 0 (``seed_judgments`` per model pair).
        per_pair: The most judgments one model pair can get (its pairs to judge).
        ties: Tie policy of the fits between rounds (``[rank] ties``).
        alpha: Regularisation of those fits (``[rank] alpha``).
        pairs: Every model pair's judging.
    """

    budget: int
    rounds: int
    seeded: int
    per_pair: int
    ties: Literal["half", "drop", "davidson"]
    alpha: float
    pairs: tuple[JudgePair, ...]

    def target(self, round_number: int) -> int:
        """Judgments in all once round ``round_number`` (0 … ``rounds``) is done."""
        extra = self.budget - self.seeded
        return self.seeded + -(-extra * round_number // self.rounds)


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


def stage_backend(
    spec: BackendSpec,
    cache: Path,
    *,
    max_tokens: int | None = None,
    temperature: float | None = None,
    seed: int | None = None,
) -> BackendConfig:
    """The backend configuration of one stage: the spec's backend, the experiment's cache.

    Only what the experiment file sets is set (so each stage's own sampling defaults apply
    to the rest, as for the command); the user's ``prefjudge.toml`` is never read.

    Args:
        spec: Who answers (backend, model, endpoint, key variable).
        cache: The experiment's response cache.
        max_tokens: The reply length, when the experiment sets one.
        temperature: The sampling temperature (models).
        seed: The sampling seed, when set.

    Returns:
        The configuration (its sampling settings are the stage's: see
        :meth:`BackendConfig.sampling`).
    """
    values: dict[str, Any] = {"kind": spec.backend, "cache": str(cache)}
    for name, value in (
        ("model", spec.model),
        ("base_url", spec.base_url),
        ("api_key_env", spec.api_key_env),
        ("timeout", spec.request_timeout),
        ("max_retries", spec.max_retries),
        ("max_failure_streak", spec.max_failure_streak),
        ("max_tokens", max_tokens),
        ("temperature", temperature),
        ("seed", seed),
    ):
        if value is not None and value != "":
            values[name] = value
    return BackendConfig.model_validate(values)


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
        files = _Files(root, cache, augmented, gen_files, score_files)
        judgment_files = _judge_stages(experiment, base, files, n_tasks, judge_engine, stages)
        stages += _rank_stages(experiment, root, judgment_files)
    if experiment.correlate is not None:
        stages.append(_correlate_stage(experiment, base, root, merged_scores))
    if experiment.personas is not None:
        stages += _persona_stages(experiment, root, augmented, gen_files, n_tasks, cache)
    stages += _closing_stages(experiment, root, merged_scores,
                              [*score_files.values(), *judgment_files])
    return root, stages


@dataclass(frozen=True)
class _Files:
    """The files the judge stages read: results folder, cache, tasks, generations, scores."""

    root: Path
    cache: Path
    augmented: Path
    generations: dict[str, Path]
    scores: dict[str, Path]


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
        backend = _model_backend(experiment, model, cache)
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


def _judge_stages(
    experiment: Experiment,
    base: Path,
    files: _Files,
    n_tasks: int,
    judge_engine: JudgingEngine | None,
    stages: list[Stage],
) -> list[Path]:
    """Add a judge stage per model pair (and the suggested rounds); return the verdict files.

    A method that finds facts (``evidence``, ``hybrid``) is given the two models' score
    files: the score stages, before it, ran each generation's tests once, and the judge
    takes the results from their records (:mod:`prefjudge.judge.facts.from_scores`).
    """
    judge = experiment.judge
    assert judge is not None
    per_pair = generations_per_model(experiment, n_tasks)
    if judge.pairs != "all":
        per_pair = min(per_pair, int(judge.pairs))
    traits = method_traits(judge.method, judge.fallback)
    adaptive = judge.strategy == "suggest"
    limit = (
        min(judge.seed_judgments, per_pair)
        if adaptive
        else (None if judge.pairs == "all" else int(judge.pairs))
    )
    judge_backend = (
        stage_backend(judge, files.cache, max_tokens=judge.max_tokens)
        if traits.needs_model
        else None
    )
    sampling = (
        judge_backend.sampling(**JUDGE_SAMPLING)
        if judge_backend is not None
        else Sampling(**JUDGE_SAMPLING)
    )
    judgment_files: list[Path] = []
    judge_pairs = []
    for a, b in itertools.combinations(experiment.models, 2):
        out = files.root / "judgments" / f"{a.slug()}__{b.slug()}.jsonl"
        judgment_files.append(out)
        settings = _judge_settings(experiment, base, files, (a, b), out, traits, sampling,
                                   judge_engine)
        judge_pairs.append(JudgePair(a.name, b.name, out, settings, judge_backend))
        stages.append(
            Stage(
                "judge",
                f"judge {a.name} vs {b.name}" + (" (round 0)" if adaptive else ""),
                out,
                replace(settings, limit=limit),
                judge_backend,
                requests=(limit if adaptive else per_pair) * traits.calls_per_pair,
                records=limit if adaptive else per_pair,
                bound=traits.calls_bound,
            )
        )
    if adaptive:
        stages.append(
            _rounds_stage(experiment, files.root, judge_pairs, per_pair, traits.calls_per_pair)
        )
    return judgment_files


def _judge_settings(
    experiment: Experiment,
    base: Path,
    files: _Files,
    models: tuple[ModelSpec, ModelSpec],
    out: Path,
    traits: MethodTraits,
    sampling: Sampling,
    judge_engine: JudgingEngine | None,
) -> JudgeFileSettings:
    """One model pair's judging settings (without ``limit``)."""
    judge = experiment.judge
    assert judge is not None
    a, b = models
    augmented = str(files.augmented)
    return JudgeFileSettings(
        inputs=(str(files.generations[a.name]), str(files.generations[b.name])),
        output=out,
        method=judge.method,
        tasks=(augmented,),
        tests=(augmented,) if traits.needs_tests else (),  # the tasks keep tests
        criterion=judge.criterion if traits.needs_tests else None,
        fallback=judge.fallback if _uses_fallback(traits, judge.method) else "criteralign",
        guidance=Path(resolve(base, judge.guidance)) if judge.guidance else None,
        sampling=sampling,
        engine=judge_engine if traits.needs_tests else None,
        regenerated=True,  # the score stages refuse any other change first
        # each generation's tests ran once, in its score stage: the facts come from there
        scores=(files.scores[a.name], files.scores[b.name]) if traits.needs_tests else (),
    )


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


def _uses_fallback(traits: MethodTraits, method: str) -> bool:
    """Whether the method's model calls are its fallback's (``hybrid``)."""
    return traits.model_method is not None and traits.model_method != method


def _model_backend(experiment: Experiment, model: ModelSpec, cache: Path) -> BackendConfig:
    """A model's backend: its temperature and seed, its reply length or the experiment's."""
    max_tokens = model.max_tokens or experiment.generate.max_tokens
    return stage_backend(
        model, cache, max_tokens=max_tokens, temperature=model.temperature, seed=model.seed
    )


def _rounds_stage(
    experiment: Experiment, root: Path, pairs: list[JudgePair], per_pair: int, calls: int
) -> Stage:
    """The rounds of suggested pairs after round 0; the budget bounds their requests."""
    judge = experiment.judge
    assert judge is not None and judge.budget is not None
    seeded = min(judge.seed_judgments, per_pair) * len(pairs)
    budget = max(min(judge.budget, per_pair * len(pairs)), seeded)
    rounds = JudgeRounds(
        budget=budget,
        rounds=judge.rounds,
        seeded=seeded,
        per_pair=per_pair,
        ties=experiment.rank.ties,
        alpha=experiment.rank.alpha,
        pairs=tuple(pairs),
    )
    # at most the budget's judgments; criteralign's calls per judgment vary (≥ 5)
    bound = "about" if judge.method == "criteralign" else "≤"
    return Stage(
        "judge-rounds",
        f"judge: {judge.rounds} rounds of suggested pairs",
        root / "judgments",
        requests=(budget - seeded) * calls,
        records=budget - seeded,
        bound=bound,
        rounds=rounds,
    )


def _persona_stages(
    experiment: Experiment,
    root: Path,
    augmented: Path,
    gen_files: dict[str, Path],
    n_tasks: int,
    cache: Path,
) -> list[Stage]:
    """Per persona: rewrite, pick the original answers, generate, compare every pair."""
    spec = experiment.personas
    assert spec is not None
    stages = []
    backend = stage_backend(spec, cache, max_tokens=spec.max_tokens)
    for persona in spec.names:
        folder = root / "personas" / persona
        tasks = folder / "tasks.jsonl"
        stages.append(
            Stage(
                "persona-rewrite",
                f"persona {persona}: rewrite",
                tasks,
                RewriteSettings(
                    augmented,
                    persona,
                    tasks,
                    max_attempts=spec.max_attempts,
                    sampling=backend.sampling(**REWRITE_SAMPLING),
                ),
                backend,
                requests=2 * n_tasks,
                records=n_tasks,
                bound="≥",
            )
        )
        stages.append(
            Stage(
                "persona-originals",
                f"persona {persona}: original answers",
                folder / "original",
                inputs=[tasks, *gen_files.values()],
            )
        )
        generated = _persona_generate_stages(experiment, persona, folder, n_tasks, cache, stages)
        stages += _persona_compare_stages(experiment, persona, folder, augmented, generated,
                                          n_tasks, backend)
    return stages


def _persona_generate_stages(
    experiment: Experiment,
    persona: str,
    folder: Path,
    n_tasks: int,
    cache: Path,
    stages: list[Stage],
) -> dict[str, Path]:
    """Add each model's answers to the persona's prompts; return their files by model."""
    generated = {}
    for model in experiment.models:
        out = folder / "generations" / f"{model.slug()}.jsonl"
        generated[model.name] = out
        model_backend = _model_backend(experiment, model, cache)
        stages.append(
            Stage(
                "generate",
                f"persona {persona}: generate {model.name}",
                out,
                GenerateSettings(
                    augmented=folder / "tasks.jsonl",
                    output=out,
                    protocols=("single",),
                    ks=(0,),
                    model_name=model.name,
                    sampling=model_backend.sampling(),
                ),
                model_backend,
                requests=n_tasks,
                records=n_tasks,
                bound="≤",
            )
        )
    return generated


def _persona_compare_stages(
    experiment: Experiment,
    persona: str,
    folder: Path,
    augmented: Path,
    generated: dict[str, Path],
    n_tasks: int,
    backend: BackendConfig,
) -> list[Stage]:
    """Compare every model pair as the persona, beside the original prompts' answers."""
    spec = experiment.personas
    assert spec is not None
    originals = {
        model.name: folder / "original" / f"{model.slug()}.jsonl" for model in experiment.models
    }
    stages = []
    for a, b in itertools.combinations(experiment.models, 2):
        out = folder / f"{a.slug()}__{b.slug()}.jsonl"
        stages.append(
            Stage(
                "persona-compare",
                f"persona {persona}: {a.name} vs {b.name}",
                out,
                CompareSettings(
                    generated[a.name],
                    generated[b.name],
                    persona,
                    (folder / "tasks.jsonl",),
                    out,
                    original=(originals[a.name], originals[b.name]),
                    original_tasks=(augmented,),
                    original_judging=spec.original_judging,
                    bootstrap=max(experiment.rank.bootstrap, 10),
                    ci_seed=experiment.experiment.seed,
                    sampling=backend.sampling(**COMPARE_SAMPLING),
                ),
                backend,
                requests=2 * 2 * n_tasks,
                records=2 * n_tasks,
                bound="≤",
            )
        )
    return stages


def original_answers(tasks: Path, generations: Path, out: Path) -> int:
    """The single-turn k = 0 answers of ``generations`` to the tasks in ``tasks``.

    What the persona comparison sets beside the persona prompts' answers: the same
    models on the original prompts, for the tasks whose rewrite was accepted.
    """
    import json

    kept = {json.loads(line)["task_id"] for line in tasks.read_text().splitlines() if line.strip()}
    lines = []
    for line in generations.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if (
            record.get("task_id") in kept
            and record.get("protocol") == "single"
            and record.get("k") == 0
            and not generation_failed(record)
        ):
            lines.append(line + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(out)
    return len(lines)
