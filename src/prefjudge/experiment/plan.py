"""From an experiment to its stages: which command runs, on what, into which file.

Each stage is one ordinary ``prefjudge`` command (the same journals, resume and locks as
when it is run by hand) writing into the results folder::

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from prefjudge.experiment.config import BackendSpec, Experiment
from prefjudge.scoring.sources import HUB_PREFIX, find_hub_dataset

CALLS_PER_PAIR = {"monolithic": 2, "pointwise": 3, "evidence": 0}
CRITERALIGN_MIN_CALLS = 5  # criteria, two judgings, two syntheses; refinement adds more


@dataclass
class Stage:
    """One step of an experiment.

    Attributes:
        kind: ``augment``, ``generate``, ``score``, ``merge-scores``, ``judge``,
            ``judge-rounds``, ``merge-battles``, ``rank``, ``correlate``, ``report``,
            ``leaderboard``, ``view``.
        label: What the progress display calls it.
        output: The file it writes.
        args: The ``prefjudge`` command line it runs (empty for steps done in-process).
        requests: Model requests a fresh run of it makes.
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
    args: list[str] = field(default_factory=list)
    requests: int = 0
    bound: str = ""
    inputs: list[Path] = field(default_factory=list)
    rounds: JudgeRounds | None = None


@dataclass(frozen=True)
class JudgePair:
    """One model pair's judging command, for the rounds of ``strategy = "suggest"``.

    Attributes:
        model_a: The first model's name (as its verdicts name it).
        model_b: The second model's name.
        output: Its verdict file.
        args: The ``prefjudge judge`` command line without ``--limit`` (each round
            raises the limit; the judge resumes, so only the new pairs are judged).
    """

    model_a: str
    model_b: str
    output: Path
    args: tuple[str, ...]


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
        pairs: Every model pair's judging command.
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


def _backend_args(spec: BackendSpec, max_tokens: int | None, cache: Path) -> list[str]:
    args = ["--backend", spec.backend]
    urls = [spec.base_url] if isinstance(spec.base_url, str) else spec.base_url or []
    for option, value in (("--model", spec.model),
                          *(("--base-url", url) for url in urls),
                          ("--api-key-env", spec.api_key_env)):
        if value:
            args += [option, value]
    if max_tokens is not None:
        args += ["--max-tokens", str(max_tokens)]
    return [*args, "--cache", str(cache)]


def resolve(base: Path, value: str) -> str:
    """A path in the experiment file, relative to it; a hub name as it is."""
    candidate = (base / value).expanduser()
    return str(candidate) if candidate.exists() or "/" not in value.strip("./") else value


def benchmark_source(base: Path, value: str) -> str:
    """``[benchmark] source``: a hub name as it is, else a path relative to the file.

    ``hub:OWNER/NAME`` is always a hub name (checked, and never read from a local folder,
    by :func:`prefjudge.scoring.sources.resolve_source`); a known hub id or alias
    (``bigcodebench``) is one unless a file or folder of that name is beside the file.
    """
    if value.startswith(HUB_PREFIX):
        return value
    if find_hub_dataset(value) is not None and not (base / value).expanduser().exists():
        return value
    return resolve(base, value)


def judge_bound(method: str, model_method: str) -> str:
    """How a judge stage's planned requests bound the real ones (``≥``, ``≤`` or exact).

    CriterAlign may refine ties (more calls); ``hybrid`` asks the model only for the pairs
    the evidence leaves undecided (fewer, so ``≤``, or ``about`` when the fallback is
    CriterAlign, whose pairs may cost more); the others are exact.
    """
    if method == "hybrid":  # fewer pairs reach the model, but CriterAlign's may cost more
        return "about" if model_method == "criteralign" else "≤"
    return "≥" if model_method == "criteralign" else ""


def build_plan(experiment: Experiment, base: Path, n_tasks: int,
               score_args: Sequence[str] = ()) -> tuple[Path, list[Stage]]:
    """Every stage of ``experiment``, in order, and its results folder.

    Args:
        experiment: The checked experiment file.
        base: The folder relative paths of the file are relative to.
        n_tasks: Tasks of the benchmark slice (for request counts).
        score_args: Options added to every ``score`` stage (``--engine ray`` ...).
    """
    root = (base / experiment.experiment.results / experiment.experiment.name).resolve()
    cache = root / "cache.sqlite"
    bench = experiment.benchmark
    augmented = root / "augmented.jsonl"
    augment_args = ["augment", benchmark_source(base, bench.source), "-o", str(augmented),
                    "--selector", experiment.augment.selector, "--k", str(experiment.augment.k),
                    "--seed", str(experiment.augment.seed)]
    for option, value in (("--limit", bench.limit), ("--split", bench.split),
                          ("--subset", bench.subset)):
        if value:
            augment_args += [option, str(value)]
    augment_requests = 0
    if experiment.augment.selector == "llm":
        augment_args += _backend_args(experiment.augment, experiment.augment.max_tokens, cache)
        augment_requests = n_tasks  # one choice per task; a reply that needs repair asks again
    stages = [Stage("augment", "augment", augmented, augment_args, requests=augment_requests,
                    bound="≥" if augment_requests else "")]
    gen_files: dict[str, Path] = {}
    score_files: list[Path] = []
    protocols = experiment.generate.protocols
    protocol = protocols[0] if len(protocols) == 1 else "both"
    for model in experiment.models:
        slug = model.slug()
        gens = root / "generations" / f"{slug}.jsonl"
        gen_files[model.name] = gens
        args = ["generate", str(augmented), "-o", str(gens), "--protocol", protocol,
                "--k", experiment.generate.ks, "--samples", str(experiment.generate.samples),
                "--name", model.name, "--temperature", str(model.temperature),
                *_backend_args(model, model.max_tokens or experiment.generate.max_tokens, cache)]
        if model.seed is not None:
            args += ["--seed", str(model.seed)]
        stages.append(Stage("generate", f"generate {model.name}", gens, args,
                            requests=generation_requests(experiment, n_tasks)))
    for model in experiment.models:
        scores = root / "scores" / f"{model.slug()}.jsonl"
        score_files.append(scores)
        stages.append(Stage("score", f"score {model.name}", scores,
                            ["score", str(gen_files[model.name]), "--tasks", str(augmented),
                             "-o", str(scores), "--ci-seed", str(experiment.experiment.seed),
                             *score_args]))
    merged_scores = root / "scores.jsonl"
    stages.append(Stage("merge-scores", "merge scores", merged_scores, inputs=score_files))
    judge = experiment.judge
    judgment_files: list[Path] = []
    if judge is not None and len(experiment.models) > 1:
        per_pair = generations_per_model(experiment, n_tasks)
        if judge.pairs != "all":
            per_pair = min(per_pair, int(judge.pairs))
        model_method = judge.fallback if judge.method == "hybrid" else judge.method
        calls = CALLS_PER_PAIR.get(model_method, CRITERALIGN_MIN_CALLS)
        adaptive = judge.strategy == "suggest"
        limit = min(judge.seed_judgments, per_pair) if adaptive else (
            None if judge.pairs == "all" else int(judge.pairs))
        judge_pairs = []
        for a, b in itertools.combinations(experiment.models, 2):
            out = root / "judgments" / f"{a.slug()}__{b.slug()}.jsonl"
            judgment_files.append(out)
            args = ["judge", str(gen_files[a.name]), str(gen_files[b.name]),
                    "--tasks", str(augmented), "-o", str(out), "--method", judge.method]
            if judge.method != "evidence":
                args += _backend_args(judge, judge.max_tokens, cache)
            if judge.method in ("evidence", "hybrid"):
                args += ["--tests", str(augmented)]  # the augmented tasks keep their tests
                if judge.criterion:
                    args += ["--criterion", judge.criterion]
            if judge.method == "hybrid":
                args += ["--fallback", judge.fallback]
            if judge.guidance:
                args += ["--guidance", resolve(base, judge.guidance)]
            judge_pairs.append(JudgePair(a.name, b.name, out, tuple(args)))
            if limit is not None:
                args += ["--limit", str(limit)]
            stages.append(Stage("judge", f"judge {a.name} vs {b.name}"
                                + (" (round 0)" if adaptive else ""), out, args,
                                requests=(limit if adaptive else per_pair) * calls,
                                bound=judge_bound(judge.method, model_method)))
        if adaptive:
            stages.append(_rounds_stage(experiment, root, judge_pairs, per_pair, calls))
        battles = root / "battles.jsonl"
        stages.append(Stage("merge-battles", "merge battles", battles, inputs=judgment_files))
        rank = experiment.rank
        stages.append(Stage("rank", "rank", root / "ratings.csv",
                            ["rank", str(battles), "-o", str(root / "ratings.csv"),
                             "--json", str(root / "ratings.json"),
                             "--plot", str(root / "ratings.png"), "--ties", rank.ties,
                             "--alpha", str(rank.alpha), "--bootstrap", str(rank.bootstrap),
                             "--ci-seed", str(experiment.experiment.seed)]))
    if experiment.correlate is not None:
        spec = experiment.correlate
        args = ["correlate", str(merged_scores), "--elo", resolve(base, spec.elo),
                "-o", str(root / "correlation.csv"), "--json", str(root / "correlation.json")]
        if spec.elo_model_col:
            args += ["--elo-model-col", spec.elo_model_col]
        if spec.elo_col:
            args += ["--elo-col", spec.elo_col]
        stages.append(Stage("correlate", "correlate", root / "correlation.csv", args))
    if experiment.personas is not None:
        stages += _persona_stages(experiment, root, augmented, gen_files, n_tasks, cache)
    stages.append(Stage("report", "report", root / "report.html",
                        ["report", str(merged_scores), "-o", str(root / "report.html"),
                         "--bootstrap", str(experiment.report.bootstrap),
                         "--ci-seed", str(experiment.experiment.seed),
                         "--title", f"prefjudge — {experiment.experiment.name}"]))
    stages.append(Stage("leaderboard", "leaderboard", root / "leaderboard.csv",
                        inputs=[*score_files, *judgment_files]))
    stages.append(Stage("view", "view", root / "view.html",
                        ["view", str(root), "-o", str(root / "view.html"),
                         "--title", f"prefjudge — {experiment.experiment.name}"]))
    return root, stages


def _rounds_stage(experiment: Experiment, root: Path, pairs: list[JudgePair], per_pair: int,
                  calls: int) -> Stage:
    """The rounds of suggested pairs after round 0; the budget bounds their requests."""
    judge = experiment.judge
    assert judge is not None and judge.budget is not None
    seeded = min(judge.seed_judgments, per_pair) * len(pairs)
    budget = max(min(judge.budget, per_pair * len(pairs)), seeded)
    rounds = JudgeRounds(budget=budget, rounds=judge.rounds, seeded=seeded, per_pair=per_pair,
                         ties=experiment.rank.ties, alpha=experiment.rank.alpha,
                         pairs=tuple(pairs))
    # at most the budget's judgments; criteralign's calls per judgment vary (≥ 5)
    bound = "about" if judge.method == "criteralign" else "≤"
    return Stage("judge-rounds", f"judge: {judge.rounds} rounds of suggested pairs",
                 root / "judgments", requests=(budget - seeded) * calls, bound=bound,
                 rounds=rounds)


def _persona_stages(experiment: Experiment, root: Path, augmented: Path,
                    gen_files: dict[str, Path], n_tasks: int, cache: Path) -> list[Stage]:
    """Per persona: rewrite, pick the original answers, generate, compare every pair."""
    spec = experiment.personas
    assert spec is not None
    stages = []
    backend = _backend_args(spec, spec.max_tokens, cache)
    for persona in spec.names:
        folder = root / "personas" / persona
        tasks = folder / "tasks.jsonl"
        stages.append(Stage("persona-rewrite", f"persona {persona}: rewrite", tasks,
                            ["persona", "rewrite", str(augmented), "--persona", persona,
                             "-o", str(tasks), "--max-attempts", str(spec.max_attempts),
                             *backend],
                            requests=2 * n_tasks, bound="≥"))
        originals = {model.name: folder / "original" / f"{model.slug()}.jsonl"
                     for model in experiment.models}
        stages.append(Stage("persona-originals", f"persona {persona}: original answers",
                            folder / "original", inputs=[tasks, *gen_files.values()]))
        generated = {}
        for model in experiment.models:
            out = folder / "generations" / f"{model.slug()}.jsonl"
            generated[model.name] = out
            args = ["generate", str(tasks), "-o", str(out), "--protocol", "single", "--k", "0",
                    "--name", model.name, "--temperature", str(model.temperature),
                    *_backend_args(model, model.max_tokens or experiment.generate.max_tokens,
                                   cache)]
            if model.seed is not None:
                args += ["--seed", str(model.seed)]
            stages.append(Stage("generate", f"persona {persona}: generate {model.name}", out,
                                args, requests=n_tasks, bound="≤"))
        for a, b in itertools.combinations(experiment.models, 2):
            out = folder / f"{a.slug()}__{b.slug()}.jsonl"
            stages.append(Stage(
                "persona-compare", f"persona {persona}: {a.name} vs {b.name}", out,
                ["persona", "compare", str(generated[a.name]), str(generated[b.name]),
                 "--persona", persona, "--tasks", str(tasks),
                 "--original", str(originals[a.name]), str(originals[b.name]),
                 "--original-tasks", str(augmented),
                 "--original-judging", spec.original_judging, "-o", str(out),
                 "--bootstrap", str(max(experiment.rank.bootstrap, 10)),
                 "--ci-seed", str(experiment.experiment.seed), *backend],
                requests=2 * 2 * n_tasks, bound="≤"))
    return stages


def original_answers(tasks: Path, generations: Path, out: Path) -> int:
    """The single-turn k = 0 answers of ``generations`` to the tasks in ``tasks``.

    What the persona comparison sets beside the persona prompts' answers: the same
    models on the original prompts, for the tasks whose rewrite was accepted.
    """
    import json

    kept = {json.loads(line)["task_id"] for line in tasks.read_text().splitlines()
            if line.strip()}
    lines = []
    for line in generations.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if (record.get("task_id") in kept and record.get("protocol") == "single"
                and record.get("k") == 0 and not record.get("error")):
            lines.append(line + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(out)
    return len(lines)
