"""`prefjudge run`: a bad experiment file or benchmark source is one message, never a traceback.

The file in UTF-16 or with a byte that is not UTF-8, nesting too deep to read, a misspelt
``[benchmark] source`` (the close known names are listed) and a bare hub name (resolved as
``score --tasks`` resolves it: :func:`prefjudge.scoring.sources.resolve_source`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pj_cli import SAMPLE_DIR, flat, invoke

ROOT = Path(__file__).resolve().parents[2]


def experiment_text(tmp_path: Path, source: str) -> str:
    """The smoke experiment with results under ``tmp_path`` and ``source`` as the benchmark."""
    text = (ROOT / "examples" / "smoke.toml").read_text()
    text = text.replace('results = "../results"', f'results = "{tmp_path / "results"}"')
    return text.replace('source = "../datasets/sample/tasks.jsonl"', f'source = "{source}"')


def refused(path: Path, env: dict[str, str] | None = None) -> str:
    """``run PATH --dry-run``'s message: exit status 1, no traceback (one would be raised)."""
    result = invoke("run", path, "--dry-run", ok=False, env=env)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return flat(result.output)


@pytest.mark.parametrize(
    ("encode", "expected"),
    [
        (lambda text: text.encode("utf-16"), "not UTF-8 text: it looks like UTF-16"),
        (lambda text: text.encode("utf-16-le"), "not UTF-8 text: it looks like UTF-16"),
        (
            lambda text: text.replace("seed = 0", "seed = 0 # caf\udce9", 1).encode(
                "utf-8", "surrogateescape"
            ),
            ":12: not UTF-8 text (byte 0xe9",
        ),
    ],
)
def test_an_experiment_file_not_in_utf8_is_named_with_its_line(tmp_path, encode, expected):
    path = tmp_path / "exp.toml"
    path.write_bytes(encode(experiment_text(tmp_path, str(SAMPLE_DIR / "tasks.jsonl"))))
    said = refused(path)
    assert f"{path}" in said and expected in said and "save it as UTF-8" in said, said


@pytest.mark.parametrize("nested", ["[" * 4000 + "]" * 4000, "{a = " * 3000 + "1" + "}" * 3000])
def test_an_experiment_file_nested_too_deeply_is_refused(tmp_path: Path, nested: str) -> None:
    path = tmp_path / "exp.toml"
    text = experiment_text(tmp_path, str(SAMPLE_DIR / "tasks.jsonl"))
    path.write_text(text.replace("[augment]\n", f"[augment]\nx = {nested}\n"))
    said = refused(path)
    assert f"{path}: arrays or inline tables nested too deeply" in said, said


def test_a_misspelt_benchmark_source_lists_the_close_known_names(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(experiment_text(tmp_path, "humanevalpls"))
    said = refused(path)
    assert f"{path}:15: field 'benchmark.source': 'humanevalpls': no such file or folder" in said
    assert "did you mean 'humanevalplus'" in said, said


def test_a_missing_relative_file_is_named_beside_the_experiment(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(experiment_text(tmp_path, "data/tasks.jsonl"))
    said = refused(path)
    assert f"{tmp_path / 'data' / 'tasks.jsonl'}: no such file or folder" in said, said


def test_a_bare_hub_name_is_the_hub_dataset_as_for_score(tmp_path: Path) -> None:
    from prefjudge.experiment.plan import benchmark_source

    assert benchmark_source(tmp_path, "humanevalplus") == "humanevalplus"
    (tmp_path / "humanevalplus").mkdir()  # a folder of that name beside the file wins
    assert benchmark_source(tmp_path, "humanevalplus") == str(tmp_path / "humanevalplus")
    path = tmp_path / "sub" / "exp.toml"
    path.parent.mkdir()
    path.write_text(experiment_text(tmp_path, "humanevalplus"))
    said = refused(path, env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
    assert "hub:evalplus/humanevalplus[test]: not in the local cache" in said, said


@pytest.mark.parametrize(
    ("old", "new", "line", "field"),
    [
        ("temperature = 1.0", "temperature = inf", 35, "models.1.temperature"),
        ("temperature = 0.0", "temperature = nan", 30, "models.0.temperature"),
        ("alpha = 0.01 ", "alpha = -inf ", 44, "rank.alpha"),
        (
            "bootstrap = 200\n\n[report]",
            "composite_alpha = nan\n\n[report]",
            45,
            "rank.composite_alpha",
        ),
        (
            'method = "monolithic"',
            'method = "monolithic"\nrequest_timeout = 1e999',
            40,
            "judge.request_timeout",
        ),
    ],
    ids=["temperature-inf", "temperature-nan", "alpha", "composite_alpha", "request_timeout"],
)
def test_every_float_field_refuses_nan_and_infinity_with_its_line(
    tmp_path: Path, old: str, new: str, line: int, field: str
) -> None:
    """TOML's nan, inf and 1e999 are floats: each float key refuses them with file:line."""
    path = tmp_path / "exp.toml"
    text = experiment_text(tmp_path, str(SAMPLE_DIR / "tasks.jsonl"))
    assert old in text
    path.write_text(text.replace(old, new, 1))
    said = refused(path)
    assert f"{path}:{line}: field '{field}': not a finite number" in said, said
