"""Tasks and pairs by hub dataset name, offline, through the real ``datasets`` library.

Nothing here touches the network: every test runs with ``HF_HUB_OFFLINE=1`` and
``HF_DATASETS_OFFLINE=1`` and its own empty ``HF_HOME``, and lays out in it what an
earlier online session would have left there, from real benchmark rows:

* the ``datasets`` cache of ``load_dataset("bigcode/bigcodebench")`` (Arrow files under
  ``datasets/bigcode___bigcodebench/default/0.0.0/<hash>``, prepared by the same builder
  from a folder laid out like the hub repository, README ``configs`` included);
* the hub cache of ``hf download evalplus/humanevalplus --repo-type dataset`` (the repo's
  parquet file under ``hub/datasets--evalplus--humanevalplus/snapshots/<sha>``), and of
  ``amazon/CodePrefBench`` (its ``eval/*.jsonl.gz``) and ``bigcode/bigcodereward``.

Then the resolver loads them by name, and what it loads equals what the local files give.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from pj_cli import flat, invoke, rows
from pj_files import write_jsonl
from pj_schema_reply import schema_reply

from prefjudge.io import iter_objects
from prefjudge.journal import binding_path
from prefjudge.judge.pairs import load_pairs, load_preference_source, open_preference_source
from prefjudge.scoring.sources import (
    HUB_INSTALL_HINT,
    HubSourceError,
    UnknownSourceError,
    load_task_source,
    open_task_source,
)
from prefjudge.scoring.tasks import load_tasks

BIGCODEBENCH = Path("benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz")
HUMANEVALPLUS = Path("benchmarks/evalplus/HumanEvalPlus-v0.1.10.jsonl.gz")
CODEPREFBENCH = Path("preferences/codeprefbench/human-preference-alignment.jsonl.gz")
BCR_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "pairs" / "bigcodereward_sample.jsonl"
HUB_HUMANEVALPLUS_COLUMNS = ("task_id", "prompt", "canonical_solution", "entry_point", "test")
"""The columns of the hub's evalplus/humanevalplus (no EvalPlus inputs)."""
SHA = "0123456789abcdef0123456789abcdef01234567"
ROWS = 5




def first_rows(path: Path, n: int = ROWS) -> list[dict[str, Any]]:
    found = []
    for _, record in iter_objects(path):
        assert isinstance(record, dict)
        found.append(record)
        if len(found) == n:
            break
    return found


def hub_snapshot(home: Path, repo_id: str) -> Path:
    """The folder ``hf download REPO --repo-type dataset`` fills, with ``refs/main`` to it."""
    repo = home / "hub" / f"datasets--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / SHA
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(SHA)
    return snapshot


def cache_as_loaded_by_name(repo_dir: Path, repo_id: str) -> None:
    """Leave the ``datasets`` cache an online ``load_dataset(repo_id)`` leaves.

    That load prepares the repo's files into Arrow files under
    ``<cache>/<owner>___<name>/<config>/<version>/<revision>``, where the library looks
    for them offline. Here the same builder prepares them from the repository's files on
    disk (under the folder's name), and the folder takes the repo id's name.
    """
    import datasets

    owner, name = repo_id.split("/")
    assert repo_dir.name == name
    datasets.load_dataset_builder(str(repo_dir)).download_and_prepare()
    cache = Path(datasets.config.HF_DATASETS_CACHE)
    (cache / name).rename(cache / f"{owner}___{name}")


@pytest.fixture
def bigcodebench(shared_data: Path, hf_home: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """``bigcode/bigcodebench`` split ``v0.1.0_hf`` in the datasets cache: 5 real rows."""
    import datasets

    records = first_rows(shared_data / BIGCODEBENCH)
    repo = tmp_path / "hub-repo" / "bigcodebench"
    (repo / "data").mkdir(parents=True)
    datasets.Dataset.from_list(records).to_parquet(
        str(repo / "data" / "v0.1.0_hf-00000-of-00001.parquet")
    )
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: v0.1.0_hf\n"
        "    path: data/v0.1.0_hf-*\n---\n# BigCodeBench (5 rows)\n",
        encoding="utf-8",
    )
    cache_as_loaded_by_name(repo, "bigcode/bigcodebench")
    return records


@pytest.fixture
def humanevalplus(shared_data: Path, hf_home: Path) -> list[dict[str, Any]]:
    """``evalplus/humanevalplus`` in the hub cache, in the hub's columns: 5 real rows."""
    import datasets

    records = [{k: r[k] for k in HUB_HUMANEVALPLUS_COLUMNS}
               for r in first_rows(shared_data / HUMANEVALPLUS)]
    snapshot = hub_snapshot(hf_home, "evalplus/humanevalplus")
    (snapshot / "data").mkdir()
    datasets.Dataset.from_list(records).to_parquet(
        str(snapshot / "data" / "test-00000-of-00001.parquet")
    )
    return records


@pytest.fixture
def codeprefbench(shared_data: Path, hf_home: Path) -> Path:
    """``amazon/CodePrefBench`` in the hub cache: its real human-preference file."""
    snapshot = hub_snapshot(hf_home, "amazon/CodePrefBench")
    (snapshot / "eval").mkdir()
    shutil.copy(shared_data / CODEPREFBENCH, snapshot / "eval" / CODEPREFBENCH.name)
    return shared_data / CODEPREFBENCH


# --------------------------------------------------------------------------- tasks


def test_bigcodebench_by_name_equals_the_release_file(
    bigcodebench: list[dict[str, Any]], shared_data: Path
) -> None:
    local = load_tasks(shared_data / BIGCODEBENCH)
    want = {task_id: local[task_id] for task_id in [r["task_id"] for r in bigcodebench]}
    for name in ("bigcodebench", "BigCodeBench", "bigcode/bigcodebench",
                 "hub:bigcode/bigcodebench"):
        tasks = load_task_source(name, split="v0.1.0_hf")
        assert tasks == want, name  # ids, prompts, tests, references, libs: everything
    tasks, origin = open_task_source("bigcodebench", split="v0.1.0_hf", limit=3)
    assert list(tasks) == list(want)[:3]
    assert origin.label == "hub:bigcode/bigcodebench[v0.1.0_hf]" and origin.paths == ()
    assert origin.identity["hub"] == "bigcode/bigcodebench"
    assert origin.identity["fingerprint"]  # the cached data's own, the same for any limit
    assert open_task_source("bigcodebench", split="v0.1.0_hf")[1].identity == origin.identity


def test_the_default_split_is_the_latest_version_and_only_cached_splits_load_offline(
    bigcodebench: list[dict[str, Any]],
) -> None:
    with pytest.raises(UnknownSourceError) as excinfo:
        load_task_source("bigcodebench")  # v0.1.4 by default: not in this cache
    message = str(excinfo.value)
    assert "v0.1.4" in message and "v0.1.0_hf" in message and "offline" in message


def test_humanevalplus_by_name_from_the_hub_cache(
    humanevalplus: list[dict[str, Any]], shared_data: Path, tmp_path: Path
) -> None:
    hub = load_task_source("humanevalplus")  # split "test" by default
    release = load_tasks(shared_data / HUMANEVALPLUS)
    assert list(hub) == [r["task_id"] for r in humanevalplus]
    for task_id, task in hub.items():
        assert task.prompt == release[task_id].prompt
        assert task.tests == release[task_id].tests
        assert task.entry_point == release[task_id].entry_point
        assert task.canonical_solution == release[task_id].canonical_solution
        assert task.test_format == "humaneval"  # the hub rows lack the EvalPlus inputs
    assert hub == load_tasks(write_jsonl(tmp_path / "same-rows.jsonl", humanevalplus))
    assert list(load_task_source("evalplus/humanevalplus", limit=2)) == list(hub)[:2]


def test_dataset_folders_are_sources(shared_data: Path, hf_home: Path, tmp_path: Path) -> None:
    import datasets

    records = first_rows(shared_data / BIGCODEBENCH)
    want = load_tasks(write_jsonl(tmp_path / "rows.jsonl", records))
    saved = tmp_path / "saved"
    datasets.Dataset.from_list(records).save_to_disk(str(saved))
    assert load_task_source(saved) == want
    both = tmp_path / "both"
    datasets.DatasetDict({
        "v0.1.0_hf": datasets.Dataset.from_list(records),
        "head": datasets.Dataset.from_list(records[:2]),
    }).save_to_disk(str(both))
    with pytest.raises(UnknownSourceError, match=r"several splits \(head, v0.1.0_hf\)"):
        load_task_source(both)
    assert list(load_task_source(both, split="head")) == list(want)[:2]
    with pytest.raises(UnknownSourceError, match="no split 'v9'"):
        load_task_source(both, split="v9")
    files = tmp_path / "files"
    files.mkdir()
    datasets.Dataset.from_list(records).to_parquet(str(files / "rows.parquet"))
    tasks, origin = open_task_source(files, limit=4)
    assert tasks == dict(list(want.items())[:4])
    assert origin.identity["split"] == "train" and origin.identity["digest"]


def test_an_existing_path_is_never_a_dataset_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "datasets", None)  # the hub cannot even be tried
    task = {"task_id": "t/1", "prompt": "Say hi.", "test_format": "none"}
    write_jsonl(tmp_path / "bigcodebench", [task])  # a file named like the alias
    tasks, origin = open_task_source("bigcodebench", split="ignored-for-files")
    assert list(tasks) == ["t/1"] and origin.paths == (Path("bigcodebench"),)
    assert origin.identity == {}


# --------------------------------------------------------------------------- pairs


def test_codeprefbench_by_name_equals_the_file(codeprefbench: Path) -> None:
    want, _ = load_pairs(codeprefbench)
    pairs, issues, origin = open_preference_source("codeprefbench")
    assert pairs == want and issues == []  # same file, same loader: same ids and sources
    assert origin.paths[0].name == CODEPREFBENCH.name
    assert origin.identity["hub"] == "amazon/CodePrefBench"
    assert load_preference_source("amazon/codeprefbench",
                                  subset="human-preference-alignment", limit=3)[0] == want[:3]
    with pytest.raises(UnknownSourceError, match="known: human-preference, correctness"):
        load_preference_source("codeprefbench", subset="style")


def test_bigcodereward_rows_convert_like_the_file(hf_home: Path) -> None:
    import datasets

    records = [json.loads(line) for line in BCR_SAMPLE.read_text("utf-8").splitlines()]
    records = [r for r in records if "states" in r]  # the hub's rows all have states
    shots = datasets.Dataset.from_list(records).add_column(
        "execution_screenshot_A", [None] * len(records)
    ).cast_column("execution_screenshot_A", datasets.Image())
    snapshot = hub_snapshot(hf_home, "bigcode/bigcodereward")
    (snapshot / "data").mkdir()
    shots.to_parquet(str(snapshot / "data" / "train-00000-of-00001.parquet"))
    want, _ = load_pairs(write_jsonl(hf_home.parent / "rows.jsonl", records))
    pairs, issues, origin = open_preference_source("bigcodereward")
    assert issues == [] and origin.label == "hub:bigcode/bigcodereward[train]"
    assert len(pairs) == len(records) == 4
    assert {p.source for p in pairs} == {"bigcodereward:bigcode/bigcodereward[train]"}
    assert [p.model_copy(update={"source": None}) for p in pairs] == [
        p.model_copy(update={"source": None}) for p in want
    ]


# --------------------------------------------------------------------------- errors


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(UnknownSourceError) as excinfo:
        load_task_source("bigcode/bigcodebenchh")
    message = str(excinfo.value)
    for name in ("bigcodebench (bigcode/bigcodebench)", "humaneval (openai/openai_humaneval)",
                 "livecodebench (livecodebench/code_generation_lite)", "hub:OWNER/NAME"):
        assert name in message
    with pytest.raises(UnknownSourceError, match=r"codeprefbench \(amazon/CodePrefBench\)"):
        load_preference_source("nope")
    with pytest.raises(UnknownSourceError, match="holds preference pairs, not benchmark tasks"):
        load_task_source("codeprefbench")
    with pytest.raises(UnknownSourceError, match=r"missing\.jsonl: no such file or folder$"):
        load_task_source("missing.jsonl")


def test_not_cached_while_offline_says_how_to_run_offline(hf_home: Path) -> None:
    for load, name in ((load_task_source, "humaneval"), (load_preference_source, "codeprefbench"),
                       (load_task_source, "hub:someone/some-tasks")):
        with pytest.raises(HubSourceError) as excinfo:
            load(name)
        message = flat(str(excinfo.value))
        assert "not in the local cache" in message and str(hf_home) in message
        assert "HF_HUB_OFFLINE or HF_DATASETS_OFFLINE is set" in message
        assert "hf download" in message and "HF_HUB_OFFLINE=1" in message
        assert "download the data file and pass its path" in message


def test_without_datasets_the_message_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` fails
    with pytest.raises(HubSourceError) as excinfo:
        load_task_source("bigcodebench")
    assert HUB_INSTALL_HINT in str(excinfo.value)
    assert "'datasets' library" in str(excinfo.value)
    result = invoke("augment", "bigcodebench", "-o", str(tmp_path / "a.jsonl"))
    assert result.exit_code == 1 and result.exception is not None
    assert HUB_INSTALL_HINT in result.output and "Traceback" not in result.output


# --------------------------------------------------------------------------- commands


def test_score_tasks_by_name_runs_the_hub_tests(
    humanevalplus: list[dict[str, Any]], tmp_path: Path
) -> None:
    gens = write_jsonl(tmp_path / "gens.jsonl", [
        {"task_id": r["task_id"], "model": "reference",
         "response": f"```python\n{r['prompt']}{r['canonical_solution']}\n```"}
        for r in humanevalplus
    ])
    out = tmp_path / "scores.jsonl"
    args = ["score", str(gens), "--tasks", "humanevalplus", "-o", str(out), "--workers", "2",
            "--bootstrap", "10"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "5 tasks from hub:evalplus/humanevalplus[test]" in flat(result.stderr)
    assert [r["func"]["status"] for r in rows(out)] == ["pass"] * ROWS
    binding = json.loads(binding_path(out).read_text())
    assert binding["inputs"]["tasks"] == []
    [source] = binding["settings"]["tasks_sources"]
    assert source["hub"] == "evalplus/humanevalplus" and source["split"] == "test"
    again = invoke(*args)
    assert again.exit_code == 0 and "5 already scored, 0 to go" in flat(again.stderr)


def test_score_with_a_dataset_not_cached_fails_cleanly(hf_home: Path, tmp_path: Path) -> None:
    gens = write_jsonl(tmp_path / "gens.jsonl", [{"task_id": "x", "model": "m", "response": ""}])
    result = invoke("score", str(gens), "--tasks", "bigcodebench",
                    "-o", str(tmp_path / "s.jsonl"))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "hub:bigcode/bigcodebench[v0.1.4]: not in the local cache" in flat(result.output)
    unknown = invoke("score", str(gens), "--tasks", "bigcodebnech")
    assert unknown.exit_code == 2 and "Invalid value for --tasks" in unknown.output
    assert "bigcodebench (bigcode/bigcodebench)" in flat(unknown.output)


def test_augment_by_name_with_a_limit_resumes_when_the_limit_grows(
    bigcodebench: list[dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "augmented.jsonl"
    args = ["augment", "bigcodebench", "--split", "v0.1.0_hf", "-o", str(out), "--k", "3"]
    result = invoke(*args, "--limit", "3")
    assert result.exit_code == 0, result.output
    ids = [r["task_id"] for r in bigcodebench]
    assert [r["task_id"] for r in rows(out)] == ids[:3]
    binding = json.loads(binding_path(out).read_text())
    assert binding["inputs"]["tasks"] == []
    assert binding["settings"]["tasks_source"]["hub"] == "bigcode/bigcodebench"
    summary = json.loads(out.with_name("augmented.summary.json").read_text())
    assert summary["tasks_file"] == "hub:bigcode/bigcodebench[v0.1.0_hf]"
    more = invoke(*args, "--limit", "5")
    assert more.exit_code == 0, more.output
    assert "3 tasks already in" in flat(more.stderr)
    assert [r["task_id"] for r in rows(out)] == ids


def test_judge_eval_by_name(
    codeprefbench: Path, fake_server: Any, tmp_path: Path
) -> None:
    fake_server.reply = schema_reply
    out = tmp_path / "eval"
    result = invoke(
        "judge-eval", "codeprefbench", "--subset", "human-preference", "-o", str(out),
        "--method", "monolithic", "--limit", "2", "--bootstrap", "10",
        "--backend", "openai", "--base-url", fake_server.url, "--model", "fake",
        "--cache", str(tmp_path / "cache.sqlite"),
    )
    assert result.exit_code == 0, result.output
    verdicts = out / "verdicts-monolithic.jsonl"
    want, _ = load_pairs(codeprefbench)
    assert [r["pair_id"] for r in rows(verdicts)] == [p.pair_id for p in want[:2]]
    [bound] = json.loads(binding_path(verdicts).read_text())["inputs"]["pairs"]
    assert bound["path"].endswith(CODEPREFBENCH.name)
