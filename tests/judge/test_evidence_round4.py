"""Evidence facts read the code the tests run, and a response cannot silence them (issue 43).

Hostile response pairs, each judged by the evidence judge with real bandit, real Ruff and
(in the command-line run) real sandboxed tests:

- security reads the block the tests run, not a usage example after it (8);
- a call bandit cannot resolve (``__import__('os').popen``, ``getattr(os, ...)``, ...) counts
  against its side (9);
- instruction facts use the strict profile by default, so ``# noqa`` silences nothing;
  ``--profile reference`` keeps the SWE-IF reference's reading, and the journal binds the
  profile (10);
- under strict, isort action comments exempt no import from style_2 (11).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pj_cli import invoke, rows
from pj_files import write_jsonl

from prefjudge.judge import JudgeSettings, judge_pairs
from prefjudge.judge.facts.correctness import response_code
from prefjudge.judge.facts.judge import EvidenceSettings
from prefjudge.judge.facts.security import security_facts
from prefjudge.records import InstructionRef, Pair, Verdict

# -- the responses ----------------------------------------------------------------------------

SHELL_THEN_EXAMPLE = (
    "```python\nimport subprocess\n\n\ndef run(cmd):\n"
    "    return subprocess.check_output(cmd, shell=True, text=True)\n```\n\n"
    "Usage:\n\n```python\nprint(run('echo hi'))\n```\n"
)
"""Command injection in the block the tests run, then a harmless usage example."""
SHLEX = (
    "```python\nimport shlex\nimport subprocess\n\n\ndef run(cmd):\n"
    "    return subprocess.check_output(shlex.split(cmd), text=True)\n```\n"
)
"""The safe way: bandit gives it low-severity B404 and B603 findings (risk 18)."""

UNRESOLVED = {
    "dunder_import": "def run(cmd):\n    return __import__('os').popen(cmd).read()\n",
    "import_module": (
        "import importlib\n\n\ndef run(cmd):\n    sub = importlib.import_module('subprocess')\n"
        "    return sub.check_output(cmd, shell=True, text=True)\n"),
    "aliased_import": (
        "from importlib import import_module as load\n\n\ndef run(cmd):\n"
        "    return load('os').popen(cmd).read()\n"),
    "computed_name": (
        "def run(cmd):\n    return __import__('o' + 's').popen(cmd).read()\n"),
    "getattr": "import os\n\n\ndef run(cmd):\n    return getattr(os, 'popen')(cmd).read()\n",
    "sys_modules": (
        "import sys\n\n\ndef run(cmd):\n    return sys.modules['os'].popen(cmd).read()\n"),
    "module_alias": (
        "import subprocess\n\nsp = subprocess\n\n\ndef run(cmd):\n"
        "    return sp.check_output(cmd, shell=True, text=True)\n"),
    "function_alias": (
        "import os\n\nopen_pipe = os.popen\n\n\ndef run(cmd):\n"
        "    return open_pipe(cmd).read()\n"),
    "pickle_getattr": (
        "import pickle\n\n\ndef run(data):\n    return getattr(pickle, 'loads')(data)\n"),
}
"""Ways of reaching a shell or a deserialiser that bandit does not see (no finding)."""

LONG = "x" * 80
NOQA_LONG = f"def answer():\n    return '{LONG}'  # noqa: E501\n"
FILE_NOQA_LONG = f"# ruff: noqa\ndef answer():\n    return '{LONG}'\n"
PLAIN_LONG = f"def answer():\n    return '{LONG}'\n"
SHORT = "def answer():\n    return 'x'\n"
LONG_THEN_SHORT_EXAMPLE = f"```python\n{PLAIN_LONG}```\n\nUsage:\n\n```python\nanswer()\n```\n"

UNSORTED = "import sys\nimport os\n\n\ndef answer():\n    return os.sep + sys.platform\n"
SORTED = "import os\nimport sys\n\n\ndef answer():\n    return os.sep + sys.platform\n"


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def pair(pair_id: str, a: str, b: str, criterion: str, **fields: object) -> Pair:
    return Pair(pair_id=pair_id, task_id="round4/run", instruction="Write it.",
                response_a=a, response_b=b, criterion=criterion, **fields)  # type: ignore[arg-type]


def line_pair(pair_id: str, a: str, b: str) -> Pair:
    return pair(pair_id, a, b, "instructions",
                instructions=[InstructionRef(id="style_3", params={"line_length": 79})])


def import_pair(pair_id: str, a: str, b: str) -> Pair:
    return pair(pair_id, a, b, "instructions", instructions=[InstructionRef(id="style_2")])


def judged(pairs: list[Pair], **settings: object) -> dict[str, Verdict]:
    found = judge_pairs(pairs, None, EvidenceSettings(method="evidence", **settings))  # type: ignore[arg-type]
    return {v.pair_id: v for v in found}


# -- 8: security reads the code the tests run -------------------------------------------------


def test_security_reads_the_tested_block_not_the_usage_example() -> None:
    hostile = pair("example", SHELL_THEN_EXAMPLE, SHLEX, "security")
    assert "shell=True" in response_code(hostile, "A")  # the code the tests run
    [fact] = security_facts([hostile])
    assert any(f.startswith("B602 ") for f in fact.detail["findings_a"]), fact.detail
    assert fact.outcome == "B", fact.fact
    assert judged([hostile])["example"].preferred == "B"


# -- 9: calls bandit cannot resolve count against their side ----------------------------------


def test_a_call_bandit_cannot_resolve_loses_to_shlex_on_either_side() -> None:
    names = sorted(UNRESOLVED)
    pairs = [pair(name, fenced(UNRESOLVED[name]), SHLEX, "security") for name in names]
    pairs += [pair(f"{name}-flipped", SHLEX, fenced(UNRESOLVED[name]), "security")
              for name in names]
    facts = dict(zip([p.pair_id for p in pairs], security_facts(pairs), strict=True))
    outcomes = {pair_id: fact.outcome for pair_id, fact in facts.items()}
    assert outcomes == {**{name: "B" for name in names},
                        **{f"{name}-flipped": "A" for name in names}}, {
        pair_id: fact.fact for pair_id, fact in facts.items()}
    for name in names:
        detail = facts[name].detail
        assert [f for f in detail["findings_a"] if f.startswith("PJ")], detail
        assert detail["risk_a"] > detail["risk_b"] == 18 and "unresolved" in detail


def test_harmless_dynamic_imports_and_module_use_add_no_finding() -> None:
    benign = (
        "import importlib\nimport os\nimport subprocess\n\n"
        "json = importlib.import_module('json')\n\n\ndef listing(path):\n"
        "    names = sorted(os.listdir(path), key=os.path.basename)\n"
        "    return json.dumps(names), subprocess.PIPE\n"
    )
    [fact] = security_facts([pair("benign", fenced(benign), fenced(benign), "security")])
    assert not [f for f in fact.detail["findings_a"] if f.startswith("PJ")], fact.detail
    assert fact.outcome == "tie"


# -- 10: instruction facts use the strict profile by default -----------------------------------


@pytest.mark.parametrize("silenced", [NOQA_LONG, FILE_NOQA_LONG], ids=["noqa-E501", "ruff-noqa"])
def test_a_silenced_long_line_does_not_beat_the_same_line_unsilenced(silenced: str) -> None:
    hostile = line_pair("noqa", fenced(silenced), fenced(PLAIN_LONG))
    strict = judged([hostile])["noqa"]
    assert strict.preferred == "tie", strict.facts
    assert strict.facts[0].detail["a"] == {"style_3": "fail"}
    # plain settings (a Ray shard's) judge under strict too
    plain = list(judge_pairs([hostile], None, JudgeSettings(method="evidence")))
    assert plain[0].preferred == "tie"
    # the reference profile honours noqa, as the SWE-IF checkers do: the silenced side wins
    assert judged([hostile], profile="reference")["noqa"].preferred == "A"


def test_line_length_is_checked_on_the_tested_block_not_a_later_example() -> None:
    hostile = line_pair("example", LONG_THEN_SHORT_EXAMPLE, fenced(SHORT))
    verdict = judged([hostile])["example"]
    assert verdict.preferred == "B", verdict.facts
    assert verdict.facts[0].detail["a"] == {"style_3": "fail"}


# -- 11: isort action comments exempt nothing under strict -------------------------------------


@pytest.mark.parametrize("comment", ["# isort: skip_file", "# isort: off",
                                     "# ruff: isort: skip_file"])
def test_an_isort_action_comment_does_not_make_unsorted_imports_pass(comment: str) -> None:
    skipped = fenced(f"{comment}\n{UNSORTED}")
    verdicts = judged([import_pair("vs-sorted", skipped, fenced(SORTED)),
                       import_pair("vs-unsorted", skipped, fenced(UNSORTED))])
    assert verdicts["vs-sorted"].preferred == "B", verdicts["vs-sorted"].facts
    assert verdicts["vs-unsorted"].preferred == "tie", verdicts["vs-unsorted"].facts
    reference = judged([import_pair("vs-unsorted", skipped, fenced(UNSORTED))],
                       profile="reference")
    assert reference["vs-unsorted"].preferred == "A"  # the reference's reading


# -- all four through `prefjudge judge`, with the tests run in the sandbox ---------------------

TASK = {
    "task_id": "round4/run", "prompt": "Write run(cmd) returning the command's output.",
    "entry_point": "run", "test_format": "humaneval",
    "tests": "def check(candidate):\n    assert candidate('echo hi').strip() == 'hi'\n",
}


def test_judge_command_decides_all_four_against_the_hostile_side(tmp_path: Path) -> None:
    pairs = [
        pair("8-example", SHELL_THEN_EXAMPLE, SHLEX, "correctness,security"),
        pair("9-dunder", fenced(UNRESOLVED["dunder_import"]), SHLEX, "correctness,security"),
        line_pair("10-noqa", fenced(NOQA_LONG), fenced(SHORT)),
        import_pair("11-isort", fenced(f"# isort: skip_file\n{UNSORTED}"), fenced(SORTED)),
    ]
    source = write_jsonl(tmp_path / "pairs.jsonl", [p.model_dump(mode="json") for p in pairs])
    tasks = write_jsonl(tmp_path / "tasks.jsonl", [TASK])
    out = tmp_path / "verdicts.jsonl"
    invoke("judge", source, "--method", "evidence", "--tests", tasks, "-o", out, ok=True)
    verdicts = {row["pair_id"]: row for row in rows(out)}
    assert {k: v["preferred"] for k, v in verdicts.items()} == {
        "8-example": "B", "9-dunder": "B", "10-noqa": "B", "11-isort": "B"}, verdicts
    for name in ("8-example", "9-dunder"):  # both sides pass the tests: security decides
        facts = verdicts[name]["facts"]
        assert facts[0]["outcome"] == "tie" and facts[0]["fact"] == "both pass their tests"
        assert verdicts[name]["decided_by"] == "evidence:security"
    binding = json.loads(Path(f"{out}.journal.json").read_text())
    assert binding["settings"]["profile"] == "strict"
    refused = invoke("judge", source, "--method", "evidence", "--tests", tasks, "-o", out,
                     "--profile", "reference")
    assert refused.exit_code != 0 and "profile" in refused.output


@pytest.mark.parametrize(("profile", "preferred"), [("strict", "tie"), ("reference", "A")])
def test_a_ray_shard_finds_instruction_facts_under_the_runs_profile(
    profile: str, preferred: str
) -> None:
    """What a node finds (``shard_facts``) is checked under the profile the run was given."""
    from prefjudge.records import Fact
    from prefjudge.scale.judge_shard import JudgeShard, shard_facts

    hostile = line_pair("noqa", fenced(NOQA_LONG), fenced(PLAIN_LONG))
    shard = JudgeShard(index=0, pairs=[hostile], tasks={}, criterion="instructions",
                       profile=profile)
    (found,) = shard_facts(shard)
    (fact,) = [Fact.model_validate_json(text) for text in found]
    assert fact.kind == "instructions" and fact.outcome == preferred, fact
