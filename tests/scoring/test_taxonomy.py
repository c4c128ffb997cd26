"""The VeriCode taxonomy file and parameter validation, resolution and repair."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from prefjudge.paths import data_dir
from prefjudge.records import InstructionRef
from prefjudge.scoring.applicability import PREDICATES
from prefjudge.scoring.taxonomy import (
    CATEGORIES,
    ParamProblem,
    Taxonomy,
    TaxonomyError,
    UnknownInstructionError,
    check_params,
    get,
    load_taxonomy,
    template_fields,
)

TAXONOMY = load_taxonomy()

# The published SWE-IF table: id -> (Ruff selectors or python check, parameter names).
TABLE = {
    "style_1": (["E", "W"], []),
    "style_2": (["I"], []),
    "style_3": (["E501"], ["line_length"]),
    "style_4": (["COM812"], []),
    "style_5": (["Q"], []),
    "style_6": (["N806"], []),
    "style_7": (["UP015"], []),
    "style_8": (["PLR2004"], []),
    "style_9": (["RUF059"], []),
    "logic_1": (["F"], []),
    "logic_2": (["PLR1702"], ["max_nested_blocks"]),
    "logic_3": (["PLR0912"], ["max_branches"]),
    "logic_4": (["PLR0915"], ["max_statements"]),
    "logic_5": (["PLR0914"], ["max_locals"]),
    "logic_6": (["RET504", "RET505", "RET506", "RET507", "RET508"], []),
    "logic_7": (["C901"], ["max_complexity"]),
    "logic_8": (["PERF401", "PERF402", "PERF403"], []),
    "logic_9": (["PLR0916"], ["max_bool_expr"]),
    "doc_1": (
        ["ANN001", "ANN002", "ANN003", "ANN201", "ANN202", "ANN204", "ANN205", "ANN206", "ANN401"],
        [],
    ),
    "doc_2": (["W505"], ["line_length"]),
    "doc_3": (["D"], ["convention"]),
    "doc_4": ("pure_code", []),
    "doc_5": ("no_comments_or_docstrings", []),
    "doc_6": ("code_then_json", []),
    "error_1": (["B904"], []),
    "error_2": (["EM101", "EM102", "EM103"], []),
    "error_3": (["UP024"], []),
    "error_4": (["TRY003"], []),
    "library_1": (["PTH"], []),
    "library_2": (["PD002", "PD011"], []),
}
DEFAULTS = {
    "line_length": (79, 79, 120),
    "max_nested_blocks": (1, 1, 5),
    "max_branches": (2, 1, 10),
    "max_statements": (6, 3, 50),
    "max_locals": (2, 1, 20),
    "max_complexity": (2, 1, 15),
    "max_bool_expr": (1, 1, 5),
}
DOC_LINE_LENGTH = (72, 50, 120)


def test_thirty_instructions_in_five_categories():
    assert TAXONOMY.ids == list(TABLE)
    counts = Counter(spec.category for spec in TAXONOMY)
    assert counts == {"style": 9, "logic": 9, "documentation": 6, "error_handling": 4, "library": 2}
    assert set(counts) == set(CATEGORIES)


@pytest.mark.parametrize("instruction_id", list(TABLE))
def test_verifiers_and_parameters_follow_the_table(instruction_id):
    spec = TAXONOMY.get(instruction_id)
    verifier, params = TABLE[instruction_id]
    if isinstance(verifier, list):
        assert (spec.verifier.kind, spec.verifier.select) == ("ruff", verifier)
    else:
        assert (spec.verifier.kind, spec.verifier.check) == ("python", verifier)
    assert [param.name for param in spec.params] == params
    assert spec.description and spec.name
    assert spec.prompt_multi.startswith("Now modify")
    for param in spec.params:
        expected = DOC_LINE_LENGTH if instruction_id == "doc_2" else DEFAULTS.get(param.name)
        if expected is not None:
            assert (param.type, param.default, param.min, param.max) == ("int", *expected)
        assert param.recommended and param.description


def test_preview_rules_are_marked_and_doc_checks_scoped():
    preview = {spec.id for spec in TAXONOMY if spec.verifier.preview}
    assert preview == {"style_9", "logic_2", "logic_5", "logic_9"}  # as the reference runs them
    scopes = {spec.id for spec in TAXONOMY if spec.verifier.scope == "response"}
    assert scopes == {"doc_4", "doc_6"}
    assert get("library_2").verifier.check == "no_generic_df_name"
    assert get("doc_3").params[0].choices == ["google", "numpy", "pep257"]
    assert get("doc_3").params[0].default == "pep257"


def test_conflicts_are_symmetric_and_include_the_obvious_pairs():
    for spec in TAXONOMY:
        for other in spec.conflicts:
            assert spec.id in TAXONOMY.get(other).conflicts
    assert set(get("doc_5").conflicts) == {"doc_2", "doc_3"}
    assert get("doc_4").conflicts == ["doc_6"]


def test_templates_use_exactly_the_parameters():
    for spec in TAXONOMY:
        names = {param.name for param in spec.params}
        assert template_fields(spec.prompt_single) == names
        assert template_fields(spec.prompt_multi) == names


def test_prompts_are_filled_with_resolved_parameters():
    assert TAXONOMY.prompt(InstructionRef(id="style_3")) == (
        "Keep every line of the code at most 79 characters long."
    )
    multi = TAXONOMY.prompt(
        InstructionRef(id="doc_3", params={"convention": "numpy"}), multi_turn=True
    )
    assert multi.startswith("Now modify the code so that") and "numpy" in multi
    with pytest.raises(ValueError, match=r"params\.line_length"):
        TAXONOMY.prompt(InstructionRef(id="style_3", params={"line_length": 0}))


def test_loading_is_cached_and_get_raises_for_unknown_ids():
    assert load_taxonomy() is TAXONOMY
    with pytest.raises(UnknownInstructionError, match="unknown instruction id 'style_99'"):
        TAXONOMY.get("style_99")
    assert "style_1" in TAXONOMY and "style_99" not in TAXONOMY and len(TAXONOMY) == 30


def test_by_category():
    groups = TAXONOMY.by_category()
    assert list(groups) == list(CATEGORIES)
    assert [spec.id for spec in TAXONOMY.by_category("library")["library"]] == [
        "library_1",
        "library_2",
    ]


# ---------------------------------------------------------------- parameters


def test_defaults_are_filled_in():
    result = check_params("logic_3", None)
    assert result.ok and result.params == {"max_branches": 2}
    assert check_params("logic_3", {"max_branches": 4}).params == {"max_branches": 4}
    assert check_params("style_1", {}).params == {}


@pytest.mark.parametrize(
    ("instruction_id", "params", "field", "message"),
    [
        ("style_99", {}, "id", "unknown instruction id 'style_99'"),
        ("style_3", {"width": 80}, "params.width", "unknown parameter 'width'"),
        ("style_1", {"line_length": 80}, "params.line_length", "known: none"),
        ("style_3", {"line_length": "80"}, "params.line_length", "expected an integer, got str"),
        ("style_3", {"line_length": 80.0}, "params.line_length", "got float"),
        ("style_3", {"line_length": True}, "params.line_length", "got bool"),
        ("style_3", {"line_length": 0}, "params.line_length", "outside the allowed range 1–320"),
        ("style_3", {"line_length": 321}, "params.line_length", "outside the allowed range"),
        ("doc_2", {"line_length": 60, "max_doc_length": 60}, "params.max_doc_length",
         "name the same parameter"),
        ("doc_3", {"convention": "sphinx"}, "params.convention", "'sphinx' is not one of"),
        ("doc_3", {"convention": 1}, "params.convention", "got int"),
    ],
)
def test_problems_name_the_field(instruction_id, params, field, message):
    result = check_params(instruction_id, params)
    assert len(result.problems) == 1
    assert result.problems[0].field == field
    assert message in result.problems[0].message


def test_problems_of_a_reference_unpack_as_field_and_message():
    ref = InstructionRef(id="logic_4", params={"max_statements": -1, "extra": 1})
    problems = TAXONOMY.problems(ref)
    assert [field for field, _ in problems] == ["params.extra", "params.max_statements"]
    assert all(isinstance(problem, ParamProblem) for problem in problems)
    with pytest.raises(ValueError, match=r"params\.max_statements"):
        TAXONOMY.resolve(ref)
    assert TAXONOMY.resolve(InstructionRef(id="logic_4")) == {"max_statements": 6}


def test_repair_drops_unknown_keys_and_resets_invalid_values():
    ref = InstructionRef(id="logic_4", params={"max_statements": 99, "colour": "red"})
    repaired, repairs = TAXONOMY.repair(ref)
    assert repaired == InstructionRef(id="logic_4", params={"max_statements": 6})
    assert [(r.field, r.action) for r in repairs] == [
        ("params.colour", "removed"),
        ("params.max_statements", "reverted to default 6"),
    ]
    good = InstructionRef(id="doc_3", params={"convention": "google"})
    assert TAXONOMY.repair(good) == (good, [])
    assert TAXONOMY.repair(InstructionRef(id="doc_3"))[0].params == {"convention": "pep257"}
    with pytest.raises(UnknownInstructionError):
        TAXONOMY.repair(InstructionRef(id="nope"))


# ---------------------------------------------------------------- validation on load


def specs_with(instruction_id: str, **update):
    specs = []
    for spec in TAXONOMY:
        specs.append(spec.model_copy(update=update) if spec.id == instruction_id else spec)
    return specs


def test_the_bundled_specs_validate():
    Taxonomy(list(TAXONOMY))


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (list(TAXONOMY)[:29], "expected 30 instructions, found 29"),
        ([*list(TAXONOMY)[:29], TAXONOMY.get("style_1")], "duplicate id 'style_1'"),
        (
            specs_with("doc_4", conflicts=["doc_6", "style_1"]),
            "conflict with style_1 is not symmetric",
        ),
        (specs_with("doc_4", conflicts=["doc_6", "doc_99"]), "unknown id 'doc_99'"),
        (specs_with("style_3", prompt_single="At most {width} characters."), "placeholders"),
        (specs_with("style_1", prompt_multi="Now modify it {"), "not a valid template"),
        (specs_with("style_2", id="stlye_2"), "stlye_2: id must be style_<number>"),
        (specs_with("doc_4", id="documentation_4"), "id must be doc_<number>"),
    ],
)
def test_incoherent_taxonomies_are_rejected(specs, message):
    with pytest.raises(TaxonomyError, match=message):
        Taxonomy(specs)


def test_bad_parameter_specs_are_rejected():
    spec = TAXONOMY.get("style_3")
    bad_default = spec.params[0].model_copy(update={"default": 200})
    with pytest.raises(TaxonomyError, match="default: 200 is outside"):
        Taxonomy(specs_with("style_3", params=[bad_default]))
    bad_setting = spec.verifier.model_copy(
        update={"settings": {"lint.pycodestyle.max-line-length": "{width}"}}
    )
    with pytest.raises(TaxonomyError, match="unknown parameter 'width'"):
        Taxonomy(specs_with("style_3", verifier=bad_setting))


def test_malformed_files_are_rejected(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("instructions: {}\n", encoding="utf-8")
    with pytest.raises(TaxonomyError, match="top-level 'instructions' list"):
        load_taxonomy(bad)
    bad.write_text("instructions:\n  - id: x\n", encoding="utf-8")
    with pytest.raises(TaxonomyError, match="instruction x"):
        load_taxonomy(tmp_path / "bad.yaml")


# ---------------------------------------------------------------- applicability (applies_when)

# The rule selector's applicability before it became data (the README's rules).
APPLIES_WHEN = {
    "library_2": ("uses_pandas",),
    "library_1": ("uses_files",),
    "style_7": ("uses_open", "uses_files"),
    "error_1": ("raises", "catches"),
    "error_3": ("raises", "catches"),
    "error_2": ("raises",),
    "error_4": ("raises",),
    "style_2": ("imports", "no_reference"),
    "style_8": ("compares_literal", "no_reference"),
    "style_9": ("unpacks", "no_reference"),
    "logic_8": ("loops", "no_reference"),
    **dict.fromkeys(["logic_2", "logic_3", "logic_7", "logic_9"], ("branches", "no_reference")),
    **dict.fromkeys(
        ["style_6", "logic_4", "logic_5", "logic_6", "doc_1", "doc_3"],
        ("defines_function", "no_reference"),
    ),
}


def test_the_shipped_taxonomy_states_applicability_for_every_instruction():
    for instruction_id in TAXONOMY.ids:
        names = TAXONOMY.applies_when(instruction_id)
        assert names == APPLIES_WHEN.get(instruction_id, ("always",))
        assert set(names) <= set(PREDICATES)
    with pytest.raises(UnknownInstructionError, match="'style_99'"):
        TAXONOMY.applies_when("style_99")


def write_variant(tmp_path: Path, old: str, new: str) -> Path:
    """The shipped taxonomy file with one exact piece of text replaced."""
    text = (data_dir("rubrics") / "vericode.yaml").read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = tmp_path / "variant.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "applies_when: uses_pandas",
            "applies_when: uses_panda",
            "library_2: applies_when names unknown predicate 'uses_panda' (known: always, ",
        ),
        (
            "applies_when: [imports, no_reference]",
            "applies_when: [imports, no_refrence]",
            "style_2: applies_when names unknown predicate 'no_refrence'",
        ),
        ("- id: style_2\n", "- id: stlye_2\n", "stlye_2: id must be style_<number>"),
        (
            "    conflicts: [doc_6]\n    applies_when: always\n",
            "    conflicts: [doc_6]\n",
            "doc_4: no applies_when (name a predicate, or 'always')",
        ),
        ("applies_when: uses_files\n", "applies_when: []\n", "library_1: applies_when names no"),
        (
            "applies_when: uses_files\n",
            "applies_when: [always, uses_files]\n",
            "library_1: applies_when combines 'always' with other predicates",
        ),
    ],
)
def test_bad_applicability_fails_the_load_naming_file_and_instruction(tmp_path, old, new, message):
    path = write_variant(tmp_path, old, new)
    with pytest.raises(TaxonomyError) as caught:
        load_taxonomy(path)
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_applies_when_must_be_a_name_or_a_list_of_names(tmp_path):
    path = write_variant(tmp_path, "applies_when: uses_pandas", "applies_when: {pandas: 1}")
    with pytest.raises(TaxonomyError) as caught:
        load_taxonomy(path)
    assert f"{path}: instruction library_2: applies_when must be a" in str(caught.value)


def test_applicability_for_an_unknown_id_is_an_error():
    applies = {i: TAXONOMY.applies_when(i) for i in TAXONOMY.ids}
    Taxonomy(list(TAXONOMY), applies_when=applies)
    with pytest.raises(TaxonomyError) as caught:
        Taxonomy(list(TAXONOMY), applies_when={**applies, "stlye_2": ["always"]})
    assert "applies_when given for unknown instruction id 'stlye_2'" in str(caught.value)


def test_a_taxonomy_built_without_applicability_says_so_when_asked():
    bare = Taxonomy(list(TAXONOMY))
    with pytest.raises(TaxonomyError, match=r"no applicability \(applies_when\) for style_2"):
        bare.applies_when("style_2")
