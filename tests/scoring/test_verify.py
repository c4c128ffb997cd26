"""The verifiers with the real Ruff: every instruction passing and failing, errors, batching."""

from __future__ import annotations

import gzip
import json
import random
import stat
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from verify_cases import CASES, LONG_LINE

from prefjudge.records import InstructionRef
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy
from prefjudge.scoring.verify import (
    extract_code,
    ruff_engine,
    ruff_version,
    runners,
    verify_batch,
    verify_naive,
)
from prefjudge.scoring.verify.plan import RuffCheck, plan_runs
from prefjudge.scoring.verify.ruff_engine import Diagnostic, selector_matches
from prefjudge.scoring.verify.thresholds import (
    Threshold,
    floor,
    narrow,
    shared_limits,
    threshold_of,
)

TAXONOMY = load_taxonomy()
UNPARSEABLE = "Here it is:\n\n```python\ndef broken(:\n    return 1\n```\n"


def refs(*ids: str, **params: dict) -> list[InstructionRef]:
    return [InstructionRef(id=i, params=params.get(i, {})) for i in ids]


@pytest.fixture(scope="module")
def case_items() -> list[tuple[str, list[InstructionRef]]]:
    return [
        (case.response, [InstructionRef(id=case.instruction, params=case.params)]) for case in CASES
    ]


def by_profile(way, case_items, **kwargs):
    """Run ``way`` over the cases, each case under its own profile."""
    results: list = [None] * len(CASES)
    for profile in sorted({case.profile for case in CASES}):
        indices = [i for i, case in enumerate(CASES) if case.profile == profile]
        found = way([case_items[i] for i in indices], profile=profile, **kwargs)
        for index, result in zip(indices, found, strict=True):
            results[index] = result
    return results


@pytest.fixture(scope="module")
def batched(case_items):
    return by_profile(verify_batch, case_items, workers=2)


# ---------------------------------------------------------------- every instruction


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_instruction_case(case, batched):
    (result,) = batched[CASES.index(case)]
    assert (result.status, case.reason in result.reason) == (case.expected, True), result.reason
    if case.expected == "pass":
        assert result.reason == ""


def test_every_instruction_has_a_passing_and_a_failing_case():
    for spec in TAXONOMY:
        statuses = {
            case.expected
            for case in CASES
            if case.instruction == spec.id and case.profile == "reference"
        }
        assert statuses == {"pass", "fail"}, spec.id


def test_every_strict_difference_has_cases_in_both_profiles():
    for spec in TAXONOMY:
        if not spec.verifier.profiles:
            continue
        profiles = {case.profile for case in CASES if case.instruction == spec.id}
        assert profiles == {"reference", "strict"}, spec.id


def test_every_parameter_flips_a_result_on_the_same_code():
    for spec in TAXONOMY:
        if not spec.params:
            continue
        by_response: dict[str, set[str]] = {}
        for case in CASES:
            if case.instruction == spec.id and case.params:
                by_response.setdefault(case.response, set()).add(case.expected)
        assert {"pass", "fail"} in by_response.values(), spec.id


def test_results_carry_resolved_parameters(batched):
    (result,) = batched[[case.name for case in CASES].index("style_3-default")]
    assert result.params == {"line_length": 79}


def test_batched_equals_naive_on_all_cases(case_items, batched):
    assert by_profile(verify_naive, case_items) == batched


# ---------------------------------------------------------------- parsing and scope


@pytest.mark.parametrize("profile", ["reference", "strict"])
def test_unparseable_code_fails_every_code_level_instruction(profile):
    all_refs = refs(*TAXONOMY.ids)
    for way in (verify_batch, verify_naive):
        (results,) = way([(UNPARSEABLE, all_refs)], profile=profile)
        for result in results:
            spec = TAXONOMY.get(result.id)
            assert result.status == "fail", result
            if spec.verifier.scope == "code":
                assert result.reason.startswith("does not parse"), result
        by_id = {result.id: result for result in results}
        assert "not Python" in by_id["doc_4"].reason
        assert by_id["doc_6"].status == "fail"


def test_response_level_checks_see_the_whole_response():
    response = (
        "Here is the code.\n\n```python\nx = 1\n```\n\n"
        '```json\n{"function": "main", "summary": "sets x"}\n```\n'
    )
    items = [(response, refs("doc_4", "doc_6", "style_5", "doc_5"))]
    (strict,) = verify_batch(items, profile="strict")
    assert [result.status for result in strict] == ["fail", "pass", "pass", "pass"]
    (reference,) = verify_batch(items)  # doc_6 allows no prose around the two blocks
    assert [result.status for result in reference] == ["fail", "fail", "pass", "pass"]
    assert extract_code(response) == extract_code(response, "strict") == "x = 1\n"


def test_strict_checks_only_the_last_python_block_reference_the_first_block():
    response = "```python\nx = 'single'\n```\nThen:\n```python\nx = \"double\"\n```\n"
    (strict,) = verify_batch([(response, refs("style_5"))], profile="strict")
    assert strict[0].status == "pass"
    (reference,) = verify_batch([(response, refs("style_5"))])
    assert reference[0].status == "fail"
    bash_first = "```bash\npip install pandas\n```\n```python\nx = 1\n```\n"
    (results,) = verify_batch([(bash_first, refs("logic_1"))])
    assert results[0].status == "fail" and "does not parse" in results[0].reason


@pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="needs a Python that cannot parse 3.12 syntax"
)
def test_the_df_check_is_an_error_where_only_ruff_parses_the_code():
    code = "import pandas as pd\n\ntype Frame = pd.DataFrame\ndf = pd.DataFrame()\n"
    (reference,) = verify_batch([(code, refs("library_2", "style_5"))])
    assert reference[0].status == "error" and "cannot be checked" in reference[0].reason
    assert reference[1].status == "pass"
    (strict,) = verify_batch([(code, refs("library_2"))], profile="strict")
    assert strict[0].status == "fail" and "does not parse" in strict[0].reason


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown verification profile 'lenient'"):
        verify_batch([("x = 1\n", refs("style_5"))], profile="lenient")


def test_results_follow_the_order_of_the_refs_and_report_bad_refs_as_errors():
    instructions = [
        InstructionRef(id="style_5"),
        InstructionRef(id="nope_1"),
        InstructionRef(id="style_3", params={"line_length": 500}),
        InstructionRef(id="style_3", params={"width": 80}),
        InstructionRef(id="doc_5"),
    ]
    (results,) = verify_batch([("x = 'a'  # hi\n", instructions)])
    assert [r.id for r in results] == ["style_5", "nope_1", "style_3", "style_3", "doc_5"]
    assert [r.status for r in results] == ["fail", "error", "error", "error", "fail"]
    assert "unknown instruction id 'nope_1'" in results[1].reason
    assert results[2].reason.startswith("params.line_length:")
    assert "unknown parameter 'width'" in results[3].reason


def test_empty_inputs():
    assert verify_batch([]) == []
    assert verify_batch([("x = 1\n", [])]) == [[]]


# ---------------------------------------------------------------- Ruff failures are errors


def test_missing_ruff_binary_makes_ruff_checks_errors(monkeypatch):
    monkeypatch.setattr(ruff_engine, "ruff_binary", lambda: "/nonexistent/ruff")
    instructions = refs("style_5", "logic_3", "library_2", "doc_5", "doc_4")
    for way in (verify_batch, verify_naive):
        (results,) = way([("x = 'a'\n", instructions)])
        assert [r.status for r in results] == ["error", "error", "error", "pass", "pass"]
        assert "ruff could not be started" in results[0].reason


def fake_ruff(tmp_path: Path, body: str) -> str:
    script = tmp_path / "ruff"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("echo 'boom: it broke' >&2\nexit 3", "ruff exited with status 3: boom: it broke"),
        ("echo 'not json'\nexit 0", "ruff printed no valid JSON report"),
        ("echo '{}'\nexit 0", "not a list"),
    ],
)
def test_ruff_crashes_and_garbage_are_errors(monkeypatch, tmp_path, body, reason):
    binary = fake_ruff(tmp_path, body)
    monkeypatch.setattr(ruff_engine, "ruff_binary", lambda: binary)
    (results,) = verify_batch([("x = 1\n", refs("style_5", "logic_1"))])
    assert [r.status for r in results] == ["error", "error"]
    assert reason in results[0].reason


def test_a_rule_ruff_removed_is_an_error_for_that_check_only():
    specs = []
    for spec in TAXONOMY:
        if spec.id == "library_2":
            verifier = spec.verifier.model_copy(update={"select": ["PD002", "PD011", "PD901"]})
            spec = spec.model_copy(update={"verifier": verifier})
        specs.append(spec)
    broken = Taxonomy(specs)
    items = [
        ("import os\n\nprint(1)\n", refs("library_2", "logic_1", "style_5")),
        ("x = 'a'\n", refs("style_5", "library_2")),
    ]
    batched = verify_batch(items, taxonomy=broken)
    assert batched == verify_naive(items, taxonomy=broken)
    assert [r.status for r in batched[0]] == ["error", "fail", "pass"]
    assert [r.status for r in batched[1]] == ["fail", "error"]
    assert "PD901" in batched[0][0].reason and "status 2" in batched[0][0].reason


def test_an_unusable_scratch_directory_falls_back_to_the_default(monkeypatch, tmp_path):
    monkeypatch.setattr(runners, "scratch_root", lambda: str(tmp_path / "missing"))
    (results,) = verify_batch([("x = 'a'\n", refs("style_5"))])
    assert results[0].status == "fail"


def test_ruff_version_is_the_pinned_package():
    assert ruff_version() == version("ruff")


# ---------------------------------------------------------------- batching


def test_shared_limits_give_the_same_results_as_exact_runs():
    url_line = "x = 1  # see https://example.com/" + "a" * 40 + "\n"
    pragma_line = "y = [" + "1, " * 30 + "1]  # noqa: E501\n"
    doc = '"""' + "word " * 20 + '"""\n# http://example.com/' + "b" * 70 + "\n"
    codes = [LONG_LINE, url_line, pragma_line, doc, LONG_LINE + url_line + pragma_line]
    items = []
    for value in (79, 80, 84, 90, 100, 110, 120):
        for code in codes:
            items.append(
                (
                    code,
                    [
                        InstructionRef(id="style_3", params={"line_length": value}),
                        InstructionRef(id="doc_2", params={"max_doc_length": value - 29}),
                        InstructionRef(id="logic_4", params={"max_statements": 3 + value % 7}),
                    ],
                )
            )
    batched = verify_batch(items)
    assert batched == verify_naive(items)
    assert {r.status for row in batched for r in row} == {"pass", "fail"}


def test_batched_equals_naive_on_real_code(shared_data):
    rng = random.Random(11)
    with gzip.open(
        shared_data / "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz", "rt"
    ) as f:
        tasks = [json.loads(line) for line in f]
    codes = [t["complete_prompt"] + t["canonical_solution"] for t in rng.sample(tasks, 14)]
    evalperf = (
        shared_data
        / "generations/evalperf/Qwen--Qwen2.5-7B-Instruct_vllm_temp_1.0_evalperf_results.brief.json"
    )
    results = json.loads(evalperf.read_text(encoding="utf-8"))["eval"]
    codes += [task["profiled"][0]["solution"] for task in list(results.values())[:14]]
    items = []
    for index, code in enumerate(codes):
        response = f"Sure:\n```python\n{code}\n```\n" if index % 2 else code
        chosen = rng.sample(TAXONOMY.ids, 5)
        instructions = []
        for instruction_id in chosen:
            params = {}
            for param in TAXONOMY.get(instruction_id).params:
                if param.type == "int":
                    params[param.name] = rng.randint(param.min, param.max)
                else:
                    params[param.name] = rng.choice(param.choices)
            instructions.append(InstructionRef(id=instruction_id, params=params))
        items.append((response, instructions))
    batched = verify_batch(items, workers=2)
    assert batched == verify_naive(items)
    assert batched == verify_batch(items, workers=1)


def test_selectors_match_by_linter_prefix():
    assert selector_matches("E", "E501")
    assert not selector_matches("E", "EM101")
    assert not selector_matches("D", "DTZ001")
    assert selector_matches("PLR09", "PLR0912")
    assert selector_matches("W505", "W505")
    assert not selector_matches("E501", "E502")


def test_narrow_keeps_findings_above_the_checks_own_limit():
    threshold = Threshold("PLR0912", "lint.pylint.max-branches", 3)
    found = [
        Diagnostic(1, 5, "PLR0912", "too-many-branches", "Too many branches (5 > 1)"),
        Diagnostic(9, 5, "PLR0912", "too-many-branches", "Too many branches (3 > 1)"),
    ]
    assert narrow(found, threshold, 1) == [
        Diagnostic(1, 5, "PLR0912", "too-many-branches", "Too many branches (5 > 3)")
    ]
    assert narrow(found, threshold, 2) is None  # the run did not use the limit it claims
    odd = [Diagnostic(1, 5, "PLR0912", "too-many-branches", "Too many branches: 5")]
    assert narrow(odd, threshold, 1) is None


def test_long_url_lines_raise_the_smallest_usable_limit():
    line_length = Threshold("E501", "lint.pycodestyle.max-line-length", 100)
    assert floor(line_length, "x = 1\n") == 0
    assert floor(line_length, "# see https://example.com\nx = 1\n") == 25
    assert floor(line_length, "\t" * 18 + "x = 1  # https://a.b\n") == 18 * 4 + 20
    assert floor(line_length, "# 見る https://example.com/" + "資" * 30 + "\n") == 87
    complexity = Threshold("C901", "lint.mccabe.max-complexity", 3)
    assert floor(complexity, "# https://example.com/" + "a" * 200 + "\n") == 0


def test_shared_limits_use_few_values_each_within_its_interval():
    wanted = {0: (0, 79), 1: (0, 100), 2: (85, 100), 3: (120, 90), 4: (85, 86), 5: (0, 120)}
    chosen = shared_limits(wanted)
    assert sorted(set(chosen.values())) == [79, 86, 90]  # fewer cannot serve all six
    assert chosen[0] == 79 and chosen[4] == 86 and chosen[3] == 90
    for key, (low, high) in wanted.items():
        assert min(low, high) <= chosen[key] <= high


def test_threshold_of_needs_a_single_rule_and_its_limit():
    assert threshold_of(("E501",), (("lint.pycodestyle.max-line-length", 90),)) == Threshold(
        "E501", "lint.pycodestyle.max-line-length", 90
    )
    assert threshold_of(("E", "W"), (("lint.pycodestyle.max-line-length", 79),)) is None
    assert threshold_of(("E501",), (("lint.pylint.max-branches", 3),)) is None


def test_plan_packs_compatible_settings_and_separates_conflicting_ones():
    line = "lint.pycodestyle.max-line-length"
    branches = "lint.pylint.max-branches"
    checks = [
        RuffCheck(0, 0, ("PLR0912",), False, ((branches, 3),)),
        RuffCheck(1, 1, ("PLR0912",), False, ((branches, 4),)),
        RuffCheck(2, 0, ("RET504",), False, ()),
        RuffCheck(3, 2, ("PLR0914",), True, (("lint.pylint.max-locals", 2),)),
        RuffCheck(4, 1, ("E501",), False, ((line, 90),)),
    ]
    runs = plan_runs(checks)
    placed = sorted(check.key for run in runs for group in run.members.values() for check in group)
    assert placed == [0, 1, 2, 3, 4]
    shared = [run for run in runs if not run.preview and not run.family]
    assert len(shared) == 2  # max-branches 3 and 4 cannot share a run
    assert sum(run.preview for run in runs) == 1
    assert [run.family for run in runs if run.family] == [("E501",)]
    home = next(run for run in shared if 0 in run.members)
    assert [check.key for check in home.members[0]] == [0, 2]  # RET504 joins its file's run
