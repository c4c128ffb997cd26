"""``prefjudge persona``: profiles, rewrites, user-aware comparisons and preference flips."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from prefjudge.backends.config import BackendConfig
from prefjudge.cli import main
from prefjudge.cli.display import backend_progress, print_frame, report_usage, stdout
from prefjudge.cli.options import (
    backend_options,
    bootstrap_option,
    ci_seed_option,
    old_ci_seed_option,
    renamed_option,
)
from prefjudge.cli.runs import check_output, force_new_option, open_backend, open_journal
from prefjudge.cli.streams import JOURNAL, OutputFile, is_stdout
from prefjudge.io import InputError, read_records, read_text, summary_path
from prefjudge.journal import Journal, content_digest, model_settings
from prefjudge.judge.pairs import pairs_from_generations
from prefjudge.paths import check_path_name, data_dir
from prefjudge.persona.compare import ComparisonItem, compare
from prefjudge.persona.flips import DEFAULT_RESAMPLES, flip_table, flips_summary
from prefjudge.persona.profile import (
    PersonaError,
    build_profile,
    builtin_personas,
    load_dimensions,
    load_persona,
    persona_yaml,
)
from prefjudge.persona.rewrite import RejectedRewrite, Rewriter, sandbox_reference_check
from prefjudge.persona.summary import summarize_rewrites
from prefjudge.plots.persona import plot_flips
from prefjudge.records import Persona, PersonaComparison, Task
from prefjudge.scoring.tasks import load_tasks

CHUNK = 32
PROFILE_SAMPLING = {"max_tokens": 1536, "seed": 0}
REWRITE_SAMPLING = {"max_tokens": 1024, "seed": 0}
COMPARE_SAMPLING = {"max_tokens": 1536, "seed": 0}


def _persona(name: str) -> Persona:
    try:
        return load_persona(name)
    except PersonaError as exc:
        raise click.BadParameter(str(exc), param_hint="--persona") from exc


def _plain_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``--name``, checked before any model call by the one rule for names of files."""
    try:
        return check_path_name(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@main.group("persona")
def persona() -> None:
    """Personas (vibe-testing): rewrite prompts in a user's voice, judge as that user."""


@persona.command("list")
def list_personas() -> None:
    """List the built-in personas and the comparison dimensions."""
    table = Table(title="built-in personas (rubrics/personas/)", title_justify="left")
    for column in ("name", "expertise", "verbosity", "explanation", "values"):
        table.add_column(column)
    for name in builtin_personas():
        p = load_persona(name)
        table.add_row(name, p.input.expertise, p.input.verbosity, p.output.explanation,
                      escape("; ".join(p.output.values[:2])))
    stdout.print(table)
    stdout.print("dimensions: " + ", ".join(d.id for d in load_dimensions()))


@persona.command("profile")
@click.argument("description")
@click.option("--name", required=True, callback=_plain_name,
              help="The persona's name (letters, digits, _ . -).")
@click.option("-o", "--output", required=True, type=OutputFile(stdout_ok=True),
              help="Persona YAML to write (- for stdout only).")
@backend_options(stage="persona", sampling=PROFILE_SAMPLING)
def profile(description: str, name: str, output: Path, backend_config: BackendConfig) -> None:
    """Build a structured persona profile from a short free-text DESCRIPTION.

    The YAML is printed on stdout and written to OUTPUT.
    """
    console = Console(stderr=True)
    if not is_stdout(output):
        check_output(output, "-o/--output")  # fail now, not after the model call
    text = read_text(description) if Path(description).is_file() else description
    backend = open_backend(backend_config)
    started = time.monotonic()
    try:
        made = build_profile(text, name, backend, backend_config.sampling(**PROFILE_SAMPLING))
    except (PersonaError, ValidationError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        report_usage(console, backend, started=started)
        backend.close()
    written = persona_yaml(made)
    if is_stdout(output):
        with tempfile.TemporaryDirectory(prefix="prefjudge-persona-") as folder:
            check = Path(folder) / "persona.yaml"
            check.write_text(written, encoding="utf-8")
            load_persona(check)  # what we print must load back
        click.echo(written, nl=False)
        return
    output.write_text(written, encoding="utf-8")
    load_persona(output)  # what we wrote must load back
    stdout.print(written)
    console.print(f"wrote {output}")


def _read_tasks(path: str) -> list[Task]:
    try:
        return list(load_tasks(path).values())
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc


@persona.command("rewrite")
@click.argument("tasks_path", metavar="TASKS", type=click.Path(exists=True, dir_okay=False))
@click.option("--persona", "persona_name", required=True,
              help="Built-in persona name or a persona YAML file.")
@click.option("-o", "--output", required=True, type=JOURNAL,
              help="Rewritten tasks (JSONL; rejected ones go to OUTPUT's .rejected.jsonl).")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks.")
@click.option("--max-attempts", type=click.IntRange(1, 10), default=3, show_default=True,
              help="Rewrites tried per task before it is rejected.")
@click.option("--no-reference-check", is_flag=True,
              help="Skip running each task's reference solution in the sandbox.")
@force_new_option
@backend_options(stage="persona", sampling=REWRITE_SAMPLING)
def rewrite(tasks_path: str, persona_name: str, output: Path, limit: int | None,
            max_attempts: int, no_reference_check: bool, force_new: bool,
            backend_config: BackendConfig) -> None:
    """Rewrite TASKS in a persona's voice without changing what they ask for.

    Natural-language prompts are recomposed (their example lines kept verbatim); prompts
    with code context get a persona prefix and keep the code untouched. Each rewrite is
    checked by the model (same goal, same set of correct solutions) and deterministically
    (the entry point is named; the reference solution still passes the tests).
    """
    console = Console(stderr=True)
    who = _persona(persona_name)
    tasks = _read_tasks(tasks_path)[:limit]
    out = Path(output)
    rejected_path = out.with_name(out.name.removesuffix(".jsonl") + ".rejected.jsonl")
    backend = open_backend(backend_config)
    sampling = backend_config.sampling(**REWRITE_SAMPLING)
    settings = {
        "persona": who.model_dump(mode="json"),
        "max_attempts": max_attempts,
        "reference_check": not no_reference_check,
        "templates": content_digest(data_dir("rubrics") / "personas" / "prompts"),
        **model_settings(backend, sampling),
    }
    good = Journal(out, Task, lambda t: t.task_id, stage="persona rewrite",
                   inputs={"tasks": tasks_path}, settings=settings, force_new=force_new)
    bad = Journal(rejected_path, RejectedRewrite, lambda r: r.task_id,
                  stage="persona rewrite (rejected)", inputs={"tasks": tasks_path},
                  settings=settings, force_new=force_new)
    rewriter = Rewriter(backend, who, sampling, max_attempts=max_attempts,
                        reference_check=None if no_reference_check else sandbox_reference_check)
    started = time.monotonic()
    outcomes = []
    try:
        with open_journal(good, console), open_journal(bad, console):
            todo = [t for t in tasks if t.task_id not in good.done and t.task_id not in bad.done]
            if good.resumed or bad.resumed:
                console.print(f"resuming: {len(good.done)} accepted and {len(bad.done)} "
                              f"rejected already, {len(todo)} to do")
            with backend_progress(console, len(todo) * 3,
                                  "rewrite calls (first attempt)") as advance:
                for start in range(0, len(todo), CHUNK):
                    for outcome in rewriter.rewrite(todo[start : start + CHUNK],
                                                    on_result=advance):
                        outcomes.append(outcome)
                        if outcome.accepted:
                            good.write(outcome.task)
                        else:
                            bad.write(RejectedRewrite(
                                task_id=outcome.task.task_id, persona=who.name,
                                mode=outcome.mode, attempts=outcome.attempts,
                                reasons=outcome.reasons))
            accepted = good.records()
            all_rejected = bad.records()
    finally:
        report_usage(console, backend, started=started)
        backend.close()
    summary = summarize_rewrites(
        persona=who.name, tasks_file=tasks_path, tasks=len(tasks), accepted=accepted,
        rejected=all_rejected, outcomes=outcomes, reference_check=not no_reference_check,
    )
    summary_path(out, ".json").write_text(
        json.dumps(summary.as_dict(), indent=2) + "\n", "utf-8"
    )
    table = Table(title=f"persona rewrite: {who.name}", title_justify="left")
    for column in ("tasks", "accepted", "rejected", "accepted after retry", "full / prefix"):
        table.add_column(column, justify="right")
    table.add_row(str(summary.tasks), str(summary.accepted), str(summary.rejected),
                  str(summary.accepted_after_retry),
                  f"{summary.modes.get('full', 0)} / {summary.modes.get('prefix', 0)}")
    stdout.print(table)
    for kind, count in summary.rejection_reasons.items():
        stdout.print(f"rejected ({kind}): {count}")
    console.print(f"wrote {out}, {rejected_path} and {summary_path(out, '.json')}")


def _items(gen_a: str, gen_b: str, tasks_path: str, condition: str) -> list[ComparisonItem]:
    prompts = {t.task_id: t.prompt for t in _read_tasks(tasks_path)}
    try:
        pairs, _notes = pairs_from_generations(gen_a, gen_b, tasks=prompts)
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    return [ComparisonItem(p.task_id, p.instruction, p.response_a, p.response_b, p.model_a,
                           p.model_b, condition) for p in pairs]  # type: ignore[arg-type]


def _print_flips(comparisons: list[PersonaComparison], out_prefix: Path, bootstrap: int,
                 ci_seed: int, title: str) -> dict[str, Any]:
    dims = [d.id for d in load_dimensions()]
    frame = flip_table(comparisons, n_resamples=bootstrap, seed=ci_seed, dimensions=dims)
    shown = frame[["dimension", "orig_win_rate", "orig_lo", "orig_hi", "persona_win_rate",
                   "persona_lo", "persona_hi", "diff", "flip", "significant_flip"]]
    x, y = frame["model_x"].iloc[0], frame["model_y"].iloc[0]
    print_frame(shown, title=escape(f"{title}: win rate of {x} over {y} (ties half)"))
    summary = flips_summary(frame)
    out_prefix.with_name(out_prefix.name + ".flips.json").write_text(
        json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    frame.to_csv(out_prefix.with_name(out_prefix.name + ".flips.csv"), index=False)
    plot_flips(frame, out_prefix.with_name(out_prefix.name + ".flips.png"), title=title)
    flipped = summary.get("flipped", [])
    stdout.print(f"preference flips: {', '.join(flipped) or 'none'}; outside the intervals: "
                 f"{', '.join(summary.get('significant_flips', [])) or 'none'}")
    return summary


@persona.command("compare")
@click.argument("gen_a", type=click.Path(exists=True, dir_okay=False))
@click.argument("gen_b", type=click.Path(exists=True, dir_okay=False))
@click.option("--persona", "persona_name", required=True,
              help="Built-in persona name or a persona YAML file.")
@click.option("--tasks", "tasks_path", required=True, type=click.Path(exists=True),
              help="The persona's rewritten tasks (the prompts GEN_A and GEN_B answered).")
@click.option("--original", nargs=2, type=click.Path(exists=True, dir_okay=False),
              help="ORIG_A ORIG_B: the same two models' generations on the original prompts.")
@click.option("--original-tasks", type=click.Path(exists=True, dir_okay=False),
              help="The original tasks (required with --original).")
@click.option("--original-judging", type=click.Choice(["generic", "persona"]),
              default="generic", show_default=True,
              help="Judge original-prompt answers as a generic developer (the benchmark's "
              "view) or with the persona's preferences (isolates the prompt's effect).")
@click.option("-o", "--output", required=True, type=JOURNAL,
              help="Comparisons JSONL (appended; rerunning resumes).")
@renamed_option("--n-boot", "--bootstrap", "bootstrap", type=click.IntRange(min=10))
@bootstrap_option(DEFAULT_RESAMPLES, minimum=10,
                  help="Bootstrap resamples for the flip intervals (with --original).")
@ci_seed_option
@force_new_option
@backend_options(stage="persona", sampling=COMPARE_SAMPLING)
def compare_cmd(gen_a: str, gen_b: str, persona_name: str, tasks_path: str,
                original: tuple[str, str] | None, original_tasks: str | None,
                original_judging: str, output: Path, bootstrap: int, ci_seed: int,
                force_new: bool, backend_config: BackendConfig) -> None:
    """Compare two models per dimension as the persona would.

    GEN_A and GEN_B answered the persona's prompts; with --original, the same models'
    answers to the original prompts are compared too, and the command reports where the
    preferred model flips between the two. --seed is the judge's sampling seed;
    --ci-seed only reseeds the flip intervals.
    """
    console = Console(stderr=True)
    who = _persona(persona_name)
    if original and not original_tasks:
        raise click.UsageError("--original needs --original-tasks")
    work = [("persona", who, _items(gen_a, gen_b, tasks_path, "persona"))]
    if original:
        judge_as = who if original_judging == "persona" else None
        work.append(("original", judge_as, _items(original[0], original[1],
                                                  original_tasks or "", "original")))
    out = Path(output)
    dims = load_dimensions()
    backend = open_backend(backend_config)
    sampling = backend_config.sampling(**COMPARE_SAMPLING)
    journal = Journal(
        out, PersonaComparison, lambda c: f"{c.condition}::{c.task_id}", stage="persona compare",
        inputs={"gen_a": gen_a, "gen_b": gen_b, "tasks": tasks_path,
                "original": list(original or ()), "original_tasks": original_tasks},
        settings={"persona": who.model_dump(mode="json"),
                  "original_judging": original_judging if original else None,
                  "dimensions": [d.id for d in dims],
                  "rubrics": content_digest(data_dir("rubrics") / "personas"),
                  **model_settings(backend, sampling)},
        force_new=force_new,
    )
    started = time.monotonic()
    try:
        with open_journal(journal, console):
            existing = list(journal.done.values())
            fresh: list[PersonaComparison] = []
            for condition, judge_as, items in work:
                todo = [it for it in items if f"{condition}::{it.task_id}" not in journal.done]
                with backend_progress(console, 2 * len(todo), f"{condition} comparisons") as cb:
                    for start in range(0, len(todo), CHUNK):
                        for result in compare(todo[start : start + CHUNK], judge_as, dims,
                                              backend, sampling, on_result=cb):
                            journal.write(result)
                            fresh.append(result)
    finally:
        report_usage(console, backend, started=started)
        backend.close()
    everything = existing + fresh
    errors = [c for c in everything if c.status == "error"]
    for c in errors[:5]:
        console.print(f"[red]error[/red] {escape(c.condition)} {escape(c.task_id)}: "
                      f"{escape(c.error or '')}", soft_wrap=True)
    stdout.print(f"{len(everything)} comparisons ({len(errors)} errors) in {out}")
    if original:
        _print_flips(everything, out.with_suffix(""), bootstrap, ci_seed,
                     f"persona {who.name}")


@persona.command("flips")
@click.argument("comparisons", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "prefix",
              type=OutputFile(why="it is the prefix of three files (.flips.csv/.json/.png)"),
              help="Prefix of the .flips.{csv,json,png} files "
              "[default: COMPARISONS without .jsonl].")
@renamed_option("--n-boot", "--bootstrap", "bootstrap", type=click.IntRange(min=10))
@bootstrap_option(DEFAULT_RESAMPLES, minimum=10)
@old_ci_seed_option
@ci_seed_option
def flips(comparisons: str, prefix: Path | None, bootstrap: int, ci_seed: int) -> None:
    """Per-dimension win rates, original vs persona prompts, with bootstrap intervals."""
    try:
        rows = [row for _, row in read_records(comparisons, PersonaComparison)[0]]
    except InputError as exc:
        raise click.ClickException(str(exc)) from exc
    personas = sorted({c.persona for c in rows if c.condition == "persona" and c.persona})
    base = Path(prefix) if prefix else Path(comparisons).with_suffix("")
    try:
        _print_flips(rows, base, bootstrap, ci_seed, f"persona {', '.join(personas) or '?'}")
    except ValueError as exc:
        raise click.ClickException(f"{comparisons}: {exc}") from exc
