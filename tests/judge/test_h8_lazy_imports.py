"""The judge starts light: every built-in method, the records and the facts load on demand.

Issue 44 ("commands that start at once"): the method registry lists every built-in method
by name and traits without importing any method's module (:mod:`prefjudge.judge.methods_builtin`);
a record module is imported when one of its names is first asked for
(:mod:`prefjudge.records`); a model-only method's settings import no facts code and no task
source (the hub client). Each check that needs a fresh interpreter runs one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import ClassVar

import pytest

import prefjudge.records as records
from prefjudge.judge.methods import (
    METHODS,
    TRAITS,
    LazyMethod,
    register_lazy_method,
    register_method,
    unregister_method,
)


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line, returned parsed."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_judge_package_imports_the_registry_alone() -> None:
    out = _fresh(
        "import json, sys\n"
        "import prefjudge.judge as j\n"
        "print(json.dumps({'names': list(j.METHOD_NAMES), 'model': list(j.MODEL_METHODS),\n"
        "    'mods': sorted(m for m in sys.modules if m.startswith(('prefjudge', 'pydantic')))}))"
    )
    assert out["names"] == ["criteralign", "monolithic", "pointwise", "evidence", "hybrid"]
    assert out["model"] == ["criteralign", "monolithic", "pointwise"]
    assert out["mods"] == ["prefjudge", "prefjudge.judge", "prefjudge.judge.methods",
                           "prefjudge.judge.methods_builtin", "prefjudge.lazy",
                           "prefjudge.live_views"]


def test_every_builtin_class_declares_the_traits_it_was_registered_with() -> None:
    out = _fresh(
        "import json\n"
        "from prefjudge.judge.methods import METHODS, TRAITS, LazyMethod\n"
        "rows = {}\n"
        "entries = {name: dict.__getitem__(METHODS, name) for name in METHODS}\n"
        "for name, entry in entries.items():\n"
        "    lazy = isinstance(entry, LazyMethod)\n"
        "    declared = [list(getattr(entry, t)) if t == 'template_stages' else getattr(entry, t)\n"
        "                for t in TRAITS]\n"
        "    cls = METHODS[name]\n"
        "    rows[name] = [lazy, cls.__name__, declared,\n"
        "                  [list(getattr(cls, t)) if t == 'template_stages' else getattr(cls, t)\n"
        "                   for t in TRAITS]]\n"
        "print(json.dumps(rows))"
    )
    assert set(out) == {"criteralign", "monolithic", "pointwise", "evidence", "hybrid"}
    for name, (lazy, cls_name, declared, actual) in out.items():
        assert lazy, f"{name} was imported before it was asked for"
        assert cls_name.lower() == name
        assert declared == actual, name


def test_importing_a_method_module_puts_its_classes_in_place_of_their_entries() -> None:
    out = _fresh(
        "import json\n"
        "from prefjudge.judge.methods import METHODS, LazyMethod\n"
        "from prefjudge.judge import baselines\n"
        "kinds = {n: type(dict.__getitem__(METHODS, n)).__name__ for n in METHODS}\n"
        "same = dict.__getitem__(METHODS, 'monolithic') is baselines.Monolithic\n"
        "print(json.dumps({'kinds': kinds, 'order': list(METHODS), 'same': same}))"
    )
    assert out["same"]
    assert out["order"] == ["criteralign", "monolithic", "pointwise", "evidence", "hybrid"]
    # baselines imports criteralign: those three are classes now, the evidence ones entries
    assert [out["kinds"][n] == "LazyMethod" for n in out["order"]] == [False] * 3 + [True] * 2


class _Declared:
    """A stand-in method class whose traits disagree with its lazy entry."""

    needs_model: ClassVar[bool] = True
    needs_tests: ClassVar[bool] = False
    uses_fallback: ClassVar[bool] = False
    calls_per_pair: ClassVar[int] = 7
    calls_bound: ClassVar[str] = ""
    template_stages: ClassVar[tuple[str, ...]] = ()


def test_a_class_that_registers_over_its_entry_is_checked_against_it() -> None:
    entry = register_lazy_method("h8-liar", f"{__name__}:_Declared", calls_per_pair=1)
    try:
        assert entry.is_for(_Declared)
        with pytest.raises(TypeError, match="calls_per_pair"):
            register_method("h8-liar", _Declared)
        assert isinstance(dict.__getitem__(METHODS, "h8-liar"), LazyMethod)
    finally:
        unregister_method("h8-liar")
    entry = register_lazy_method("h8-true", f"{__name__}:_Declared", calls_per_pair=7)
    try:
        assert register_method("h8-true", _Declared) is _Declared  # its own entry: replaced
        assert dict.__getitem__(METHODS, "h8-true") is _Declared
        with pytest.raises(ValueError, match="already registered"):
            register_method("h8-true", _Declared)
    finally:
        unregister_method("h8-true")
    assert [getattr(entry, t) for t in TRAITS][3] == 7


def test_a_model_methods_settings_import_no_facts_and_no_task_source() -> None:
    out = _fresh(
        "import json, sys\n"
        "from prefjudge.judge.settings import JudgeOptions, JudgeOptionError, judge_settings\n"
        "settings = judge_settings(JudgeOptions(), 'monolithic', None)\n"
        "light = [m for m in ('prefjudge.judge.facts.judge', 'prefjudge.scoring.sources',\n"
        "         'prefjudge.scoring.hub', 'prefjudge.sandbox') if m in sys.modules]\n"
        "try:\n"
        "    judge_settings(JudgeOptions(criterion='no-such-kind'), 'monolithic', None)\n"
        "    refused = None\n"
        "except JudgeOptionError as exc:\n"
        "    refused = exc.option\n"
        "evidence = judge_settings(JudgeOptions(), 'evidence', None)\n"
        "print(json.dumps({'type': type(settings).__name__, 'light': light,\n"
        "    'refused': refused, 'evidence': type(evidence).__name__,\n"
        "    'profile': evidence.profile}))"
    )
    assert out["light"] == []
    assert out["type"] == "JudgeSettings"
    assert out["refused"] == "--criterion"  # a bad criterion is still refused first
    assert out["evidence"] == "EvidenceSettings" and out["profile"] == "strict"


def test_records_load_their_modules_on_demand() -> None:
    out = _fresh(
        "import json, sys\n"
        "from prefjudge.records import Pair, Verdict\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('prefjudge.records'))))"
    )
    for unused in ("generations", "personas", "scored"):
        assert f"prefjudge.records.{unused}" not in out
    assert "prefjudge.records.pairs" in out and "prefjudge.records.verdicts" in out


def test_every_record_name_resolves_to_its_modules_object() -> None:
    import importlib

    assert set(records._HOME_OF) == set(records.__all__)
    for module, names in records._HOMES.items():
        home = importlib.import_module(f"prefjudge.records.{module}")
        for name in names:
            assert getattr(records, name) is getattr(home, name), name
    assert set(records.__all__) <= set(dir(records))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        records.Nope  # noqa: B018
