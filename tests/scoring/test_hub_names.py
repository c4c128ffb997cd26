"""Hub names are hub names: checked by the hub's rule, and never read from a local folder.

``hub:OWNER/NAME`` must be a hub repository id (``check_hub_repo_id``: the rule of
``huggingface_hub``'s ``validate_repo_id``, owner required), so ``hub:../evil`` is refused
before anything is read. A hub name (``hub:...`` or a known name like ``bigcodebench``)
reaches ``datasets.load_dataset`` as ``hf://datasets/OWNER/NAME``, which the library looks
up on the hub or in its cache only: a folder named like the dataset in the working folder
(``owner/name``, ``bigcode/bigcodebench``) is never read in its place. Each test below
lays out such a folder with a dataset the library would read, runs offline
(``HF_HUB_OFFLINE=1``, an empty Hugging Face home), and checks that its rows never appear.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from pj_cli import flat, run_cli
from pj_experiment import fake_experiment

from prefjudge.cli import main
from prefjudge.judge.pairs import open_preference_source
from prefjudge.scoring.sources import (
    HUB_REPO_PART_MAX,
    HUB_SOURCES,
    HubSourceError,
    UnknownSourceError,
    check_hub_repo_id,
    load_hub,
    open_task_source,
    remote_dataset_path,
)
from prefjudge.scoring.tasks import HubUnavailableError

EVIL_TASK = {"task_id": "evil/1", "prompt": "Say hi.", "test_format": "none"}

GOOD = ["bigcode/bigcodebench", "livecodebench/code_generation_lite", "amazon/CodePrefBench",
        "a/b", "0-hero/OIG-small-chip2", "user/Foo-BAR_foo.bar123", "_a/b_", "o.k/n-1",
        f"{'o' * HUB_REPO_PART_MAX}/{'n' * HUB_REPO_PART_MAX}"]

BAD = {
    "parent": ("../evil", "'--' and '..' are not allowed"),
    "parent only": ("..", "exactly one '/'"),
    "no owner": ("evil", "exactly one '/'"),
    "empty": ("", "exactly one '/'"),
    "slash": ("/", "OWNER or NAME is empty"),
    "no name": ("owner/", "OWNER or NAME is empty"),
    "absolute": ("/evil", "OWNER or NAME is empty"),
    "absolute deep": ("/tmp/evil", "exactly one '/'"),
    "three parts": ("a/b/c", "exactly one '/'"),
    "double slash": ("a//b", "exactly one '/'"),
    "current folder": ("./evil", "'.' starts or ends with '-' or '.'"),
    "dot name": ("owner/.", "'.' starts or ends with '-' or '.'"),
    "parent name": ("owner/..", "'--' and '..' are not allowed"),
    "dots inside": ("owner/a..b", "'--' and '..' are not allowed"),
    "dashes inside": ("a--b/c", "'--' and '..' are not allowed"),
    "leading dash": ("-owner/name", "'-owner' starts or ends with '-' or '.'"),
    "trailing dash": ("owner/name-", "'name-' starts or ends with '-' or '.'"),
    "hidden": (".owner/name", "'.owner' starts or ends with '-' or '.'"),
    "trailing dot": ("owner/name.", "'name.' starts or ends with '-' or '.'"),
    "git": ("owner/name.git", "ends with '.git'"),
    "backslash": ("owner\\name", "exactly one '/'"),
    "backslash parent": ("owner/..\\x", "'\\\\' (U+005C) is not allowed"),
    "home": ("~/evil", "'~' (U+007E) is not allowed"),
    "drive": ("C:/evil", "':' (U+003A) is not allowed"),
    "space": ("owner/my name", "' ' (U+0020) is not allowed"),
    "newline": ("owner/name\n", "'\\n' (U+000A) is not allowed"),
    "NUL": ("owner/na\x00me", "'\\x00' (U+0000) is not allowed"),
    "Cyrillic o": ("\u043ewner/name", "(U+043E) is not allowed"),
    "fullwidth slash": ("owner\uff0fname", "exactly one '/'"),
    "too long": (f"owner/{'n' * (HUB_REPO_PART_MAX + 1)}", "longer than 96 characters"),
}


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("repo", GOOD)
def test_hub_ids_pass_unchanged(repo: str) -> None:
    assert check_hub_repo_id(repo) == repo
    assert remote_dataset_path(repo) == f"hf://datasets/{repo}"


def test_every_known_dataset_has_a_hub_id() -> None:
    for entry in HUB_SOURCES:
        assert check_hub_repo_id(entry.repo) == entry.repo


@pytest.mark.parametrize(("repo", "problem"), BAD.values(), ids=list(BAD))
def test_what_is_no_hub_id_is_refused_with_the_reason(repo: str, problem: str) -> None:
    with pytest.raises(UnknownSourceError, match="expected hub:OWNER/NAME") as excinfo:
        check_hub_repo_id(repo)
    assert problem in str(excinfo.value)
    with pytest.raises(UnknownSourceError, match="not a hub dataset id"):
        open_task_source(f"hub:{repo}")
    with pytest.raises(UnknownSourceError, match="not a hub dataset id"):
        open_preference_source(f"hub:{repo}")


# --------------------------------------------------------------------------- the layout


@pytest.fixture
def offline(hf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Offline, with an empty Hugging Face home; the working folder is ``tmp_path/work``."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def local_dataset(folder: Path) -> Path:
    """A folder ``datasets.load_dataset(folder)`` reads: one JSONL file of one task."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text(json.dumps(EVIL_TASK) + "\n", encoding="utf-8")
    return folder


def test_the_local_dataset_is_one_the_library_reads(offline: Path) -> None:
    """The layout is real: given as a path, the folder loads (so a hub name could too)."""
    tasks, _ = open_task_source(local_dataset(offline.parent / "evil"))
    assert list(tasks) == ["evil/1"]


def generations(folder: Path, task_id: str = "evil/1") -> Path:
    """One generation for ``task_id`` (by default the local dataset's task: it would score)."""
    path = folder / "gens.jsonl"
    path.write_text(json.dumps({"task_id": task_id, "model": "m", "response": "hi"}) + "\n")
    return path


def score(folder: Path, tasks: str) -> tuple[int, str, Path]:
    out = folder / "scores.jsonl"
    result = CliRunner().invoke(main, ["score", str(generations(folder)), "--tasks", tasks,
                                       "-o", str(out), "--bootstrap", "10"])
    return result.exit_code, flat(result.output), out


def experiment_with_source(folder: Path, source: str) -> tuple[Path, int]:
    """The fake experiment (no model is reached) with ``[benchmark] source = SOURCE``.

    Returns:
        The file, and the line of ``source``.
    """
    path = fake_experiment(folder, "http://127.0.0.1:9/v1")
    text = path.read_text()
    start = text.index('source = "')
    end = text.index("\n", start)
    path.write_text(f'{text[:start]}source = "{source}"{text[end:]}')
    return path, text.count("\n", 0, start) + 1


# --------------------------------------------------------------------------- the commands


def test_score_refuses_hub_parent_and_never_reads_the_folder(offline: Path) -> None:
    local_dataset(offline.parent / "evil")  # ../evil from the working folder
    code, output, out = score(offline, "hub:../evil")
    assert not out.exists() and "Generating train split" not in output, output
    assert code == 2, output
    assert "Invalid value for --tasks" in output
    assert "hub:'../evil': not a hub dataset id ('--' and '..' are not allowed)" in output
    assert "evil/1" not in output and "Traceback" not in output


@pytest.mark.parametrize("tasks", ["hub:owner/name", "hub:bigcode/bigcodebench",
                                   "bigcodebench", "BigCodeBench"])
def test_a_hub_name_is_not_read_from_a_local_folder_of_that_name(
        offline: Path, tasks: str) -> None:
    """``owner/name`` and ``bigcode/bigcodebench`` exist here; the hub names stay on the hub."""
    local_dataset(offline / "owner" / "name")
    local_dataset(offline / "bigcode" / "bigcodebench")
    code, output, out = score(offline, tasks)
    assert not out.exists() and "Generating train split" not in output, output
    assert code == 1, output
    assert "not in the local cache" in output and "HF_HUB_OFFLINE" in output
    assert "evil/1" not in output and "Traceback" not in output


def test_hub_prefix_wins_over_a_local_path_spelt_the_same(offline: Path) -> None:
    """A file at ``./hub:owner/name`` is not what ``hub:owner/name`` names."""
    (offline / "hub:owner").mkdir()
    (offline / "hub:owner" / "name").write_text(json.dumps(EVIL_TASK) + "\n")
    code, output, out = score(offline, "hub:owner/name")
    assert not out.exists(), output
    assert code == 1 and "not in the local cache" in output, output


def test_augment_judge_and_judge_eval_refuse_hub_parent(offline: Path) -> None:
    local_dataset(offline.parent / "evil")
    gens = generations(offline, "t/1")
    tasks = offline / "tasks.jsonl"
    tasks.write_text(json.dumps({**EVIL_TASK, "task_id": "t/1"}) + "\n")
    runs = {
        "augment": ["augment", "hub:../evil", "-o", "a.jsonl"],
        "judge --tasks": ["judge", str(gens), str(gens), "--tasks", "hub:../evil",
                          "-o", "v.jsonl", "--method", "evidence", "--tests", str(gens)],
        "judge --tests": ["judge", str(gens), str(gens), "--tasks", str(tasks), "-o", "v.jsonl",
                          "--method", "evidence", "--tests", "hub:../evil"],
        "judge-eval": ["judge-eval", "hub:../evil", "-o", "eval", "--method", "evidence"],
    }
    for name, args in runs.items():
        result = CliRunner().invoke(main, args)
        output = flat(result.output)
        assert result.exit_code == 2, (name, output)
        assert "hub:'../evil': not a hub dataset id" in output, (name, output)
        assert "evil/1" not in output and "Traceback" not in output, (name, output)
    assert sorted(path.name for path in offline.iterdir()) == ["gens.jsonl", "tasks.jsonl"]


def test_run_refuses_a_hub_parent_benchmark_with_the_file_and_line(offline: Path) -> None:
    """``prefjudge run``: the error names the experiment file, line and key; nothing is made."""
    path, line = experiment_with_source(offline / "e", "hub:../evil")
    local_dataset(offline.parent / "evil")
    local_dataset(offline / "evil")  # ../evil from the experiment file
    done = run_cli("run", str(path), "--dry-run", ok=False, timeout=300)
    output = flat(done.stdout + done.stderr)
    assert "plan" not in output, output[-3000:]  # the slice was never counted from ../evil
    assert done.returncode == 1, output[-3000:]
    assert f"{path}:{line}: field 'benchmark.source'" in output
    assert "hub:'../evil': not a hub dataset id" in output
    assert "evil/1" not in output and "Traceback" not in output
    assert not (offline / "e" / "results").exists()


def test_run_reads_a_known_name_from_the_hub_not_from_a_folder(offline: Path) -> None:
    """``source = "bigcodebench"``: the hub dataset (here: not cached), not a local folder."""
    path, _ = experiment_with_source(offline / "e", "bigcodebench")
    local_dataset(offline / "bigcode" / "bigcodebench")
    local_dataset(offline / "e" / "bigcode" / "bigcodebench")
    result = CliRunner().invoke(main, ["run", str(path), "--dry-run"])
    output = flat(result.output)
    assert result.exit_code == 1, output[-3000:]
    assert "field 'benchmark.source': hub:bigcode/bigcodebench[v0.1.4]: not in the local cache" \
        in output
    assert "evil/1" not in output and "Traceback" not in output


def test_load_hub_refuses_what_is_no_hub_id_and_never_reads_a_local_path_of_that_name(
        offline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_hub``: the same rule, and the library is asked for the hub's copy only."""
    calls: list[str] = []

    def load_dataset(name: str, split: str, **kwargs: object) -> list[dict[str, str]]:
        calls.append(name)
        return [EVIL_TASK]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    local_dataset(offline.parent / "evil")
    local_dataset(offline / "owner" / "name")
    monkeypatch.chdir(offline)
    with pytest.raises(HubUnavailableError, match="not a hub dataset id"):
        load_hub("../evil")
    assert calls == []
    assert list(load_hub("owner/name")) == ["evil/1"]  # the fake library's rows
    assert calls == ["hf://datasets/owner/name"]  # never the folder ./owner/name


def test_a_dataset_not_cached_is_still_the_clear_offline_error(offline: Path) -> None:
    with pytest.raises(HubSourceError, match="not in the local cache"):
        open_task_source("hub:owner/name")
