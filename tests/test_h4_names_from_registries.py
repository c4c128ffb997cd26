"""Name lists written once: tie policies in ``ranking.ties``, the rest in their registries.

The experiment file checks its extension names (judging method, fallback, backend kind,
protocol, tie policy) against the registries when it is read: a name registered by a test
alone is accepted, and a wrong name is refused with every valid name listed, worded as
pydantic words a ``Literal``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from prefjudge.backends import defaults as backend_defaults
from prefjudge.backends.registry import (
    BACKEND_KINDS,
    BackendKindSpec,
    register_backend,
    unregister_backend,
)
from prefjudge.cli import defaults
from prefjudge.experiment.config import (
    BackendSpec,
    GenerateSpec,
    JudgeSpec,
    RankSpec,
    load_experiment,
)
from prefjudge.io import InputError
from prefjudge.judge.common import JudgeMethod
from prefjudge.judge.methods import judge_method, unregister_method
from prefjudge.ranking import bradley_terry, pair_counts, ties


def _message(error: ValidationError) -> tuple[tuple[object, ...], str]:
    first = error.errors()[0]
    return first["loc"], first["msg"]


def test_tie_policies_are_written_once_and_imported_without_numpy() -> None:
    assert ties.TIE_POLICIES == ("half", "drop", "davidson")
    assert pair_counts.TIE_POLICIES is ties.TIE_POLICIES
    assert bradley_terry.TIE_POLICIES is ties.TIE_POLICIES
    assert defaults.TIE_POLICIES is ties.TIE_POLICIES
    assert RankSpec().ties == ties.DEFAULT_TIES == "half"
    probe = ("import json, sys; import prefjudge.ranking.ties; "
             "print(json.dumps(sorted(m for m in ('numpy', 'pandas', 'pydantic') "
             "if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == []


def test_the_help_defaults_reexport_their_light_owners() -> None:
    assert defaults.BACKEND_KINDS is BACKEND_KINDS
    assert defaults.BACKEND_DEFAULTS is backend_defaults.BACKEND_DEFAULTS
    assert defaults.CONFIG_NAME is backend_defaults.CONFIG_NAME
    assert defaults.DEFAULT_TIES is ties.DEFAULT_TIES


def test_tie_shares_are_the_win_matrix_and_check_names_the_policies() -> None:
    counts = pair_counts.aggregate(["a", "a"], ["b", "b"], ["model_a", "tie"])
    for policy in ties.TIE_POLICIES:
        assert counts.win_matrix(policy)[0, 1] == 1 + ties.tie_share(policy)
    assert [ties.counts_ties(p) for p in ties.TIE_POLICIES] == [True, False, True]
    assert ties.check_ties("drop") == "drop"
    with pytest.raises(ValueError, match=r"unknown tie policy 'thirds'.*'half', 'drop'"):
        ties.check_ties("thirds")


@pytest.mark.parametrize(
    ("model", "values", "where", "message"),
    [
        (RankSpec, {"ties": "thirds"}, ("ties",), "Input should be 'half', 'drop' or 'davidson'"),
        (GenerateSpec, {"protocols": ["single", "both"]}, ("protocols", 1),
         "Input should be 'single' or 'multi'"),
        (BackendSpec, {"backend": "ghost"}, ("backend",),
         "Input should be 'openai', 'vllm' or 'embedded'"),
        (JudgeSpec, {"method": "vibes"}, ("method",),
         "Input should be 'criteralign', 'monolithic', 'pointwise', 'evidence' or 'hybrid'"),
        (JudgeSpec, {"fallback": "evidence"}, ("fallback",),
         "Input should be 'criteralign', 'monolithic' or 'pointwise'"),
        (RankSpec, {"ties": 3}, ("ties",), "Input should be 'half', 'drop' or 'davidson'"),
    ],
)
def test_a_wrong_name_lists_the_registered_names(
    model: type, values: dict[str, object], where: tuple[object, ...], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        model(**values)
    assert _message(caught.value) == (where, message)


def test_names_registered_by_a_test_are_accepted_and_listed() -> None:
    register_backend(BackendKindSpec("scripted", lambda config, cache: None))  # type: ignore[arg-type,return-value]

    @judge_method("terse")
    class Terse(JudgeMethod):
        calls_per_pair = 1
        template_stages = ("monolithic",)

    try:
        spec = JudgeSpec(method="terse", fallback="terse", backend="scripted")
        assert (spec.method, spec.fallback, spec.backend) == ("terse", "terse", "scripted")
        with pytest.raises(ValidationError) as caught:
            JudgeSpec(backend="ghost")
        assert _message(caught.value)[1].endswith("'embedded' or 'scripted'")
    finally:
        unregister_backend("scripted")
        unregister_method("terse")
    with pytest.raises(ValidationError):
        JudgeSpec(method="terse")


def test_the_experiment_file_names_file_line_and_choices(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(
        '[experiment]\nname = "x"\n\n[benchmark]\nsource = "tasks.jsonl"\n\n'
        '[generate]\nprotocols = ["single", "triple"]\n\n'
        '[[models]]\nname = "m"\nbackend = "embedded"\n\n[rank]\nties = "thirds"\n',
        encoding="utf-8",
    )
    (tmp_path / "tasks.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_experiment(path)
    text = str(caught.value)
    assert f"{path}:8: field 'generate.protocols.1': Input should be 'single' or 'multi'" in text
    assert f"{path}:15: field 'rank.ties': Input should be 'half', 'drop' or 'davidson'" in text
