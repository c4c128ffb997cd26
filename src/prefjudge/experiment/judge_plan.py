"""The judge stages of an experiment: one per model pair, and the rounds of suggested pairs.

``[judge]`` with ``strategy = "all"`` judges every model pair in one stage each;
``"suggest"`` judges round 0 there and spends the rest of the budget in the rounds of
:class:`~.plan_stage.JudgeRounds` (run by :mod:`.judge_rounds`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from prefjudge.backends.base import Sampling
from prefjudge.experiment.config import Experiment, ModelSpec
from prefjudge.experiment.plan_stage import JudgePair, JudgeRounds, Stage
from prefjudge.experiment.stage_backend import stage_backend
from prefjudge.judge import MethodTraits, method_traits
from prefjudge.judge.run import JudgeFileSettings, JudgingEngine
from prefjudge.judge.settings import JUDGE_SAMPLING

__all__ = ["JudgeFiles", "JudgePair", "JudgeRounds", "judge_stages"]


@dataclass(frozen=True)
class JudgeFiles:
    """What the judge stages read and where they write.

    Attributes:
        root: The results folder.
        cache: The experiment's response cache.
        augmented: The augmented tasks (with their tests).
        generations: Each model's generation file, by model name.
        scores: Each model's score file, by model name.
        guidance: The guidance folder (``[judge] guidance``, resolved), or None.
    """

    root: Path
    cache: Path
    augmented: Path
    generations: dict[str, Path]
    scores: dict[str, Path]
    guidance: Path | None = None


def judge_stages(
    experiment: Experiment,
    files: JudgeFiles,
    generations: int,
    judge_engine: JudgingEngine | None,
    stages: list[Stage],
) -> list[Path]:
    """Add a judge stage per model pair (and the suggested rounds); return the verdict files.

    A method that finds facts (``evidence``, ``hybrid``) is given the two models' score
    files: the score stages, before it, ran each generation's tests once, and the judge
    takes the results from their records (:mod:`prefjudge.judge.facts.from_scores`).

    Args:
        experiment: The checked experiment file (with a ``[judge]`` table).
        files: What the judge stages read and where they write.
        generations: Generation records per model (each model pair's pairs to judge).
        judge_engine: Where ``evidence``/``hybrid`` find their facts (None: this machine).
        stages: The plan so far; the judge stages are added to it.

    Returns:
        The verdict files, one per model pair.
    """
    judge = experiment.judge
    assert judge is not None
    per_pair = generations
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
        settings = _judge_settings(experiment, files, (a, b), out, traits, sampling,
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
    files: JudgeFiles,
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
        guidance=files.guidance,
        sampling=sampling,
        engine=judge_engine if traits.needs_tests else None,
        regenerated=True,  # the score stages refuse any other change first
        # each generation's tests ran once, in its score stage: the facts come from there
        scores=(files.scores[a.name], files.scores[b.name]) if traits.needs_tests else (),
    )


def _uses_fallback(traits: MethodTraits, method: str) -> bool:
    """Whether the method's model calls are its fallback's (``hybrid``)."""
    return traits.model_method is not None and traits.model_method != method


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
