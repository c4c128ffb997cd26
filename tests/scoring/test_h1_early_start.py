"""``prefjudge score`` starts its verification process before it imports the heavy libraries."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from prefjudge.scoring import run
from prefjudge.scoring.run import ScoreSettings, early_verifier

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"
HEAVY = ("pydantic", "numpy", "pandas", "matplotlib", "yaml", "rich", "importlib.metadata")


def probe(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_the_package_reads_its_version_only_when_asked() -> None:
    said = probe("""
        import sys
        import prefjudge
        before = "importlib.metadata" in sys.modules
        from importlib.metadata import version
        from prefjudge import __version__
        print(before, __version__ == prefjudge.__version__ == version("prefjudge"))
    """)
    assert said == "False True"
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        import prefjudge

        prefjudge.nothing_here  # noqa: B018


def test_the_use_case_and_the_verifier_handle_import_nothing_heavy() -> None:
    said = probe(f"""
        import sys
        import prefjudge.scoring.run, prefjudge.scoring.verify.process, prefjudge.journal_lock
        print(sorted(name for name in {HEAVY!r} if name in sys.modules))
    """)
    assert said == "[]"


def test_the_verifier_starts_before_the_heavy_imports_with_the_same_records(
        tmp_path: Path) -> None:
    generations = tmp_path / "generations.jsonl"
    shutil.copy(SAMPLE / "generations.jsonl", generations)
    outputs = {}
    for early in (True, False):
        out = tmp_path / f"scores-{early}.jsonl"
        said = probe(f"""
            import sys
            from prefjudge.cli import main
            from prefjudge.scoring import run
            from prefjudge.scoring.verify.process import VerifyProcess
            run.EARLY_VERIFIER_BYTES = {1 if early else 10**12}
            loaded = []
            start = VerifyProcess.__init__
            def spy(self, **kwargs):
                loaded.append(sorted(name for name in {HEAVY!r} if name in sys.modules))
                start(self, **kwargs)
            VerifyProcess.__init__ = spy
            try:
                main(["score", {str(generations)!r}, "--no-tests", "-o", {str(out)!r},
                      "--workers", "1"])
            except SystemExit as exc:
                assert not exc.code, exc.code
            print(loaded)
        """)
        outputs[early] = out.read_text("utf-8")
        if early:  # the sample is one chunk: only the early start makes a process
            assert said == "[[]]"
        else:
            assert said == "[]"
    assert outputs[True] == outputs[False]
    assert len(outputs[True].splitlines()) == 42
    assert {json.loads(line)["meta"]["profile"] for line in outputs[True].splitlines()} == \
        {"reference"}


def test_which_runs_get_a_verifier_before_their_tasks_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generations = tmp_path / "generations.jsonl"
    shutil.copy(SAMPLE / "generations.jsonl", generations)
    monkeypatch.setattr(run, "EARLY_VERIFIER_BYTES", 1)
    assert early_verifier(ScoreSettings(generations, stdin=True, no_tests=True)) is None
    assert early_verifier(ScoreSettings(generations, tasks=("tasks.jsonl",))) is None
    assert early_verifier(ScoreSettings(tmp_path / "missing.jsonl", no_tests=True)) is None
    (tmp_path / "tasks.jsonl").write_text("", "utf-8")  # tests are possible: wait for them
    assert early_verifier(ScoreSettings(generations)) is None
    process = early_verifier(ScoreSettings(generations, no_tests=True, profile="strict",
                                           workers=1))
    assert process is not None
    try:
        assert (process.workers, process.profile) == (1, "strict")
    finally:
        process.close()
    (tmp_path / "tasks.jsonl").unlink()  # no task source at all: no tests either way
    process = early_verifier(ScoreSettings(generations))
    assert process is not None
    process.close()
    monkeypatch.setattr(run, "EARLY_VERIFIER_BYTES", generations.stat().st_size + 1)
    assert early_verifier(ScoreSettings(generations, no_tests=True)) is None


def test_the_default_bootstrap_is_the_stats_default() -> None:
    from prefjudge.stats import DEFAULT_RESAMPLES

    assert ScoreSettings(Path("g.jsonl")).bootstrap == DEFAULT_RESAMPLES
