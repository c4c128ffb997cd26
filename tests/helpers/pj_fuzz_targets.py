"""The readers the fuzz test runs: one command reading one seed file (see pj_fuzz)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pj_fuzz_seeds import DEAD_URL

# ---------------------------------------------------------------------------------------------
# targets


@dataclass(frozen=True)
class Target:
    """One command reading one seed file.

    Attributes:
        name: ``command.input`` (e.g. ``score.generations``), unique.
        owner: The helper whose files hold this reader (for the findings).
        seed: The seed file, relative to the seeds folder.
        kind: ``jsonl``, ``json``, ``csv``, ``toml``, ``sqlite`` or ``text``.
        argv: The command line after ``prefjudge``, given the mutated file and the case's
            folder.
        folder: A seed folder copied whole into the case (the file mutated inside it), so
            that a resumed output keeps its journal.
        required: Fields (keys, columns) every record needs: removing one or giving it a
            wrong type makes the input invalid by construction.
        records_required: An empty file is invalid.
        gz: The reader takes gzip files too (the corrupt-gzip mutator applies).
        env: ``config``: the mutated file is ``$PREFJUDGE_CONFIG``; ``cwd``: it is
            ``./prefjudge.toml`` in the case folder, where the command runs.
        strict_utf8: Bytes that are not UTF-8 make the input invalid (prefjudge's readers
            require UTF-8).
        resumable: The file is an output the command resumes: a torn last line is what an
            interrupted run leaves, so cutting the file inside its last line keeps it valid.
        finite_numbers: Every number of the file is refused when NaN or infinite (the
            NaN-numbers mutator's ``nan``, ``inf`` and ``1e999`` are invalid there).
    """

    name: str
    owner: str
    seed: str
    kind: str
    argv: Callable[[Path, Path], list[str]]
    folder: str | None = None
    required: tuple[str, ...] = ()
    records_required: bool = True
    gz: bool = False
    env: str | None = None
    strict_utf8: bool = True
    resumable: bool = False
    finite_numbers: bool = False


def _t(
    name: str, owner: str, seed: str, kind: str, argv: Callable[[Path, Path], list[str]], **kw: Any
) -> Target:
    return Target(name, owner, seed, kind, argv, **kw)


_DEAD = [
    "--backend",
    "openai",
    "--base-url",
    DEAD_URL,
    "--model",
    "fuzz-judge",
    "--max-retries",
    "0",
    "--max-output-retries",
    "0",
    "--request-timeout",
    "5",
]

TARGETS: tuple[Target, ...] = (
    _t(
        "score.generations",
        "fuzz",
        "generations.jsonl",
        "jsonl",
        lambda f, d: [
            "score",
            f,
            "--tasks",
            d / "tasks.jsonl",
            "-o",
            d / "out.jsonl",
            "--no-tests",
            "--workers",
            "1",
        ],
        required=("task_id", "response"),
        gz=True,
    ),
    _t(
        "score.evalplus",
        "judge",
        "samples.jsonl",
        "jsonl",
        lambda f, d: [
            "score",
            f,
            "--tasks",
            d / "tasks.jsonl",
            "-o",
            d / "out.jsonl",
            "--no-tests",
            "--workers",
            "1",
            "--model",
            "m",
        ],
        required=("task_id", "solution"),
    ),
    _t(
        "score.tasks",
        "fuzz",
        "tasks.jsonl",
        "jsonl",
        lambda f, d: [
            "score",
            d / "generations.jsonl",
            "--tasks",
            f,
            "-o",
            d / "out.jsonl",
            "--workers",
            "1",
        ],
        required=("task_id",),
        gz=True,
    ),
    _t(
        "score.resume",
        "fuzz",
        "score/scores.jsonl",
        "jsonl",
        lambda f, d: [
            "score",
            d / "generations.jsonl",
            "--tasks",
            d / "tasks.jsonl",
            "-o",
            f,
            "--workers",
            "1",
        ],
        folder="score",
        required=("task_id", "model", "response"),
        records_required=False,
        resumable=True,
    ),
    _t(
        "report.scores",
        "output",
        "scores.jsonl",
        "jsonl",
        lambda f, d: ["report", f, "-o", d / "report.html", "--bootstrap", "20"],
        required=("task_id", "model", "response"),
    ),
    _t(
        "report.judge_eval",
        "output",
        "judge_eval_summary.json",
        "json",
        lambda f, d: [
            "report",
            d / "scores.jsonl",
            "-o",
            d / "report.html",
            "--bootstrap",
            "20",
            "--judge-eval",
            f,
        ],
        required=("methods",),
    ),
    _t(
        "rank.battles_csv",
        "output",
        "battles.csv",
        "csv",
        lambda f, d: ["rank", f, "-o", d / "r.csv", "--alpha", "0.01", "--bootstrap", "10"],
        required=("model_a", "model_b", "winner"),
    ),
    _t(
        "rank.battles_jsonl",
        "output",
        "battles.jsonl",
        "jsonl",
        lambda f, d: [
            "rank",
            f,
            "-o",
            d / "r.csv",
            "--alpha",
            "0.01",
            "--bootstrap",
            "10",
            "--plot",
            d / "r.png",
        ],
        required=("model_a", "model_b", "winner"),
    ),
    _t(
        "rank.verdicts",
        "output",
        "verdicts.jsonl",
        "jsonl",
        lambda f, d: ["rank", f, "--json", d / "r.json", "--alpha", "0.01", "--bootstrap", "10"],
        required=("model_a", "model_b"),
    ),
    _t(
        "rank.suggest_tasks",
        "output",
        "tasks.jsonl",
        "jsonl",
        lambda f, d: [
            "rank",
            d / "battles.csv",
            "--alpha",
            "0.01",
            "--bootstrap",
            "10",
            "--suggest",
            "2",
            "--tasks",
            f,
        ],
        required=("task_id",),
    ),
    _t(
        "correlate.table",
        "output",
        "table.csv",
        "csv",
        lambda f, d: ["correlate", f, "--bootstrap", "10", "--plot", d / "c.png"],
        required=("model", "func", "if", "rating"),
    ),
    _t(
        "correlate.elo",
        "output",
        "ratings.csv",
        "csv",
        lambda f, d: [
            "correlate",
            d / "scores.jsonl",
            "--elo",
            f,
            "--bootstrap",
            "10",
            "--json",
            d / "c.json",
        ],
        required=("model", "rating"),
    ),
    _t(
        "correlate.scores",
        "output",
        "scores.jsonl",
        "jsonl",
        lambda f, d: ["correlate", f, "--elo", d / "ratings.csv", "--bootstrap", "10"],
        required=("model",),
    ),
    _t(
        "view.scores",
        "output",
        "results/scores.jsonl",
        "jsonl",
        lambda f, d: ["view", f.parent, "-o", d / "view.html"],
        folder="results",
        required=(),
    ),
    _t(
        "view.verdicts",
        "output",
        "results/verdicts.jsonl",
        "jsonl",
        lambda f, d: ["view", f.parent, "-o", d / "view.html"],
        folder="results",
        required=(),
    ),
    _t(
        "view.leaderboard",
        "output",
        "results/leaderboard.csv",
        "csv",
        lambda f, d: ["view", f.parent, "-o", d / "view.html"],
        folder="results",
        required=(),
    ),
    _t(
        "cache.info",
        "fuzz",
        "cache/cache.sqlite",
        "sqlite",
        lambda f, d: ["cache", "info", "--cache", f],
        folder="cache",
        records_required=False,
    ),
    _t(
        "cache.info_json",
        "fuzz",
        "cache/cache.sqlite",
        "sqlite",
        lambda f, d: ["cache", "info", "--cache", f, "--format", "json"],
        folder="cache",
        records_required=False,
    ),
    _t(
        "augment.resume",
        "fuzz",
        "augment/aug.jsonl",
        "jsonl",
        lambda f, d: [
            "augment",
            f.parent / "tasks.jsonl",
            "-o",
            f,
            "--selector",
            "rule",
            "--k",
            "2",
        ],
        folder="augment",
        required=("task_id",),
        records_required=False,
        resumable=True,
    ),
    _t(
        "augment.tasks",
        "fuzz",
        "tasks.jsonl",
        "jsonl",
        lambda f, d: ["augment", f, "-o", d / "aug.jsonl", "--selector", "rule", "--k", "2"],
        required=("task_id",),
        gz=True,
    ),
    _t(
        "persona.flips",
        "output",
        "comparisons.jsonl",
        "jsonl",
        lambda f, d: ["persona", "flips", f, "-o", d / "flips", "--bootstrap", "10"],
        required=("task_id", "condition", "model_a", "model_b"),
    ),
    _t(
        "config.env",
        "fuzz",
        "prefjudge.toml",
        "toml",
        lambda f, d: ["cache", "info", "--format", "json"],
        env="config",
        records_required=False,
    ),
    _t(
        "config.cwd",
        "fuzz",
        "prefjudge.toml",
        "toml",
        lambda f, d: ["cache", "info"],
        env="cwd",
        records_required=False,
    ),
    _t(
        "run.dry_run",
        "run",
        "experiment.toml",
        "toml",
        lambda f, d: ["run", f, "--dry-run"],
        required=("name", "source"),
        finite_numbers=True,
    ),
    _t(
        "judge.pairs",
        "judge",
        "pairs.jsonl",
        "jsonl",
        lambda f, d: [
            "judge",
            f,
            "-o",
            d / "v.jsonl",
            "--method",
            "monolithic",
            "--cache",
            d / "c.sqlite",
            *_DEAD,
        ],
        required=("pair_id", "response_a", "response_b"),
    ),
    _t(
        "judge.generations",
        "judge",
        "generations.jsonl",
        "jsonl",
        lambda f, d: [
            "judge",
            f,
            d / "generations.jsonl",
            "-o",
            d / "v.jsonl",
            "--method",
            "monolithic",
            "--tasks",
            d / "tasks.jsonl",
            "--cache",
            d / "c.sqlite",
            *_DEAD,
        ],
        required=("task_id", "response"),
    ),
    _t(
        "judge_eval.pairs",
        "judge",
        "pairs.jsonl",
        "jsonl",
        lambda f, d: [
            "judge-eval",
            f,
            "-o",
            d / "eval",
            "--method",
            "monolithic",
            "--cache",
            d / "c.sqlite",
            *_DEAD,
        ],
        required=("pair_id", "response_a", "response_b"),
    ),
    _t(
        "judge_eval.resume",
        "judge",
        "judge_resume/eval/verdicts-monolithic.jsonl",
        "jsonl",
        lambda f, d: [
            "judge-eval",
            f.parent.parent / "pairs.jsonl",
            "-o",
            f.parent,
            "--method",
            "monolithic",
            "--cache",
            d / "c.sqlite",
            "--bootstrap",
            "20",
            *_DEAD,
        ],
        folder="judge_resume",
        required=("pair_id",),
        records_required=False,
        resumable=True,
    ),
    _t(
        "guidance.show",
        "judge",
        "guidance/global.md",
        "text",
        lambda f, d: ["guidance", "show", f.parent],
        folder="guidance",
        records_required=False,
    ),
    _t(
        "guidance.manifest",
        "judge",
        "guidance/manifest.json",
        "json",
        lambda f, d: ["guidance", "show", f.parent],
        folder="guidance",
    ),
    _t(
        "pair.response",
        "judge",
        "response.py",
        "text",
        lambda f, d: [
            "pair",
            f,
            d / "response.py",
            "--instruction",
            "Write it.",
            "--method",
            "monolithic",
            "--cache",
            d / "c.sqlite",
            *_DEAD,
        ],
        records_required=False,
    ),
    _t(
        "generate.augmented",
        "fuzz",
        "aug.jsonl",
        "jsonl",
        lambda f, d: ["generate", f, "-o", d / "g.jsonl", "--cache", d / "c.sqlite", *_DEAD],
        required=("task_id",),
    ),
)
TARGET_NAMES = {t.name: t for t in TARGETS}
