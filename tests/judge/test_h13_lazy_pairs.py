"""The pairs package starts at once: its names are lazy, the built-in formats registered by name.

Each import check runs in a fresh interpreter (a subprocess) and reads which modules it
imported; the registry checks use a real format module written to a real file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefjudge.cli import defaults
from prefjudge.judge import pairs
from prefjudge.judge.pairs.formats.registry import (
    LazyPairFormat,
    get_pair_format,
    pair_formats,
    register_lazy_pair_format,
    unregister_pair_format,
)

BUILT_IN = ["prefjudge", "codeprefbench", "copilot_arena", "bigcodereward"]

HEAVY = (
    "pydantic",
    "prefjudge.judge.pairs.join",
    "prefjudge.judge.pairs.evidence",
    "prefjudge.scoring.formats",
    "prefjudge.scoring.task_sources",
    "prefjudge.records.generations",
)
"""What reading a pair file has no use for (pydantic: the package import alone)."""


def _imported_after(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; its printed JSON and the modules it imported."""
    probe = textwrap.dedent(code) + textwrap.dedent("""
        import json as _json, sys as _sys
        print(_json.dumps({"result": result, "modules": sorted(_sys.modules)}))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_package_imports_no_pydantic_and_lists_the_formats() -> None:
    found = _imported_after("""
        from prefjudge.judge.pairs import PAIR_FORMATS
        result = list(PAIR_FORMATS)
    """)
    assert found["result"] == BUILT_IN
    modules = set(found["modules"])
    assert "pydantic" not in modules
    assert not any(m.startswith("prefjudge.judge.pairs.formats.") and m.split(".")[-1]
                   in ("prefjudge_jsonl", "codeprefbench", "load", "detect") for m in modules)


def test_reading_a_pair_file_imports_no_joining_evidence_or_sample_formats(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"pair_id": "p1", "task_id": "t1", "instruction": "Sort.",
                                "response_a": "a", "response_b": "b"}) + "\n")
    found = _imported_after(f"""
        from prefjudge.judge.pairs import read_pair_inputs
        from prefjudge.reporting import SilentReporter
        read = read_pair_inputs([{str(path)!r}], [], "auto", False, SilentReporter())
        result = [p.pair_id for p in read.pairs]
    """)
    assert found["result"] == ["p1"]
    assert [m for m in HEAVY[1:] if m in found["modules"]] == []


def test_every_published_name_still_imports() -> None:
    for name in pairs.__all__:
        assert getattr(pairs, name) is not None, name
    from prefjudge.judge.pairs import evidence, join

    assert pairs.attach_evidence is evidence.attach_evidence
    assert pairs.pairs_from_generations is join.pairs_from_generations
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = pairs.nothing_here


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real module, ``pj_h13_plugin``, that registers pair format ``h13`` on import."""
    (tmp_path / "pj_h13_plugin.py").write_text(textwrap.dedent("""
        from prefjudge.judge.pairs.formats.registry import PairFormatSpec, register_pair_format

        def load(path, *, skip_invalid=False):
            return [], []

        register_pair_format(PairFormatSpec("h13", load, title="H13", rank=15))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "pj_h13_plugin"
    unregister_pair_format("h13")
    sys.modules.pop("pj_h13_plugin", None)


def test_a_format_registered_by_name_is_listed_then_imported_when_used(
    plugin_module: str,
) -> None:
    entry = register_lazy_pair_format("h13", plugin_module, rank=15)
    assert isinstance(entry, LazyPairFormat)
    assert list(pairs.PAIR_FORMATS)[:2] == ["prefjudge", "h13"]  # its rank, before import
    assert plugin_module not in sys.modules
    assert "h13" in defaults.PAIR_FORMATS  # the CLI's names are the registry's, live
    spec = get_pair_format("h13")
    assert plugin_module in sys.modules
    assert spec is not None and spec.title == "H13"
    assert [s.name for s in pair_formats()][:2] == ["prefjudge", "h13"]
    with pytest.raises(ValueError, match="already registered"):
        register_lazy_pair_format("h13", plugin_module)


def test_a_module_that_does_not_register_its_format_is_named(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    (tmp_path / "pj_h13_silent.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    register_lazy_pair_format("h13silent", "pj_h13_silent")
    try:
        with pytest.raises(LookupError, match="pj_h13_silent did not register"):
            get_pair_format("h13silent")
    finally:
        unregister_pair_format("h13silent")
        sys.modules.pop("pj_h13_silent", None)


def test_the_help_defaults_are_read_from_their_owners() -> None:
    from prefjudge.judge import JUDGE_SAMPLING
    from prefjudge.judge.settings import JUDGE_SAMPLING as SETTINGS_SAMPLING

    assert defaults.JUDGE_SAMPLING is JUDGE_SAMPLING is SETTINGS_SAMPLING
    assert list(defaults.PAIR_FORMATS) == BUILT_IN
