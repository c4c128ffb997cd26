"""The persona stages of an experiment: rewrite the prompts, answer them, compare as the persona.

For each name of ``[personas]``: ``persona rewrite``, the original prompts' answers
(:func:`original_answers`), each model's answers to the rewritten prompts, and
``persona compare`` of every model pair.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from prefjudge.backends.config import BackendConfig
from prefjudge.experiment.config import Experiment
from prefjudge.experiment.plan_stage import Stage
from prefjudge.experiment.stage_backend import model_backend, stage_backend
from prefjudge.persona.run import (
    COMPARE_SAMPLING,
    REWRITE_SAMPLING,
    CompareSettings,
    RewriteSettings,
)
from prefjudge.records import generation_failed
from prefjudge.testbed.generation import GenerateSettings

__all__ = ["original_answers", "persona_stages"]


def persona_stages(
    experiment: Experiment,
    root: Path,
    augmented: Path,
    gen_files: dict[str, Path],
    n_tasks: int,
    cache: Path,
) -> list[Stage]:
    """Per persona: rewrite, pick the original answers, generate, compare every pair.

    Args:
        experiment: The checked experiment file (with a ``[personas]`` table).
        root: The results folder (each persona's files go to ``personas/<name>/``).
        augmented: The augmented tasks, whose prompts are rewritten.
        gen_files: Each model's generation file (the original prompts' answers), by name.
        n_tasks: Tasks of the benchmark slice (for request counts).
        cache: The experiment's response cache.

    Returns:
        The persona stages, in order.
    """
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
        backend = model_backend(experiment, model, cache)
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
                    sampling=backend.sampling(),
                ),
                backend,
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
