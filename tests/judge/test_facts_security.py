"""Security evidence: real bandit runs on real CodePrefBench security pairs and on snippets."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from prefjudge.judge.facts import security
from prefjudge.judge.facts.security import (
    BANDIT_PIN,
    RANK_WEIGHTS,
    SecurityDecision,
    compare_security,
    compare_security_batch,
    security_facts,
    security_findings,
    security_findings_batch,
)
from prefjudge.judge.pairs.formats import load_codeprefbench
from prefjudge.records import Pair

SPLIT = "preferences/codeprefbench/security-alignment.jsonl.gz"
# CSE/1566: md5 against sha256; CSE/1805: the same two asserts on both sides;
# CSE/1594: Python 2 prints, the unparsed rests differ; CSE/1757: A stops parsing at line 6
# with no finding so far, B parses and has findings; CSE/1726: A parses, B is cut off after
# a weak hash; CSE/1597: both cut off the same way, A uses sha1.
CHOSEN_IDS = ("CSE/1566", "CSE/1805", "CSE/1594", "CSE/1757", "CSE/1726", "CSE/1597")


@pytest.fixture(scope="module")
def real(shared_data: Path) -> dict[str, tuple[Pair, SecurityDecision]]:
    """The chosen real pairs and their decisions (one bandit run for all of them)."""
    pairs, issues = load_codeprefbench(shared_data / SPLIT)
    assert issues == []
    chosen = {p.pair_id: p for p in pairs if p.pair_id in CHOSEN_IDS}
    assert sorted(chosen) == sorted(CHOSEN_IDS)
    decisions = compare_security_batch([(p.response_a, p.response_b) for p in chosen.values()])
    return {pid: (p, d) for (pid, p), d in zip(chosen.items(), decisions, strict=True)}


def rules(report) -> list[str]:
    return [f.rule for f in report.findings]


# -- real pairs ----------------------------------------------------------------------------------


def test_real_pair_decided_by_the_named_finding(real):
    pair, decision = real["CSE/1566"]
    assert pair.label == "B"
    assert decision.outcome == "B"
    assert decision.report_a.status == decision.report_b.status == "ok"
    weak = [f for f in decision.report_a.findings if f.rule == "B324"]
    assert len(weak) == 1 and weak[0].severity == "HIGH" and "MD5" in weak[0].message
    assert weak[0].line == 16 and "hashlib.md5" in pair.response_a.splitlines()[15]
    assert "B324" not in rules(decision.report_b)
    assert decision.fact.startswith("A has 1 finding B lacks: B324 at line 16")
    assert decision.report_a.risk == sum(f.weight for f in decision.report_a.findings)
    assert decision.report_a.risk > decision.report_b.risk
    assert decision.report_a.version == BANDIT_PIN


def test_real_pair_with_equal_findings_is_a_tie(real):
    _, decision = real["CSE/1805"]
    assert decision.outcome == "tie"
    assert decision.report_a.status == decision.report_b.status == "ok"
    assert rules(decision.report_a) == rules(decision.report_b) == ["B101", "B101"]
    assert decision.report_a.risk == decision.report_b.risk == 2 * RANK_WEIGHTS["HIGH"]
    assert "same bandit findings" in decision.fact and "2× B101" in decision.fact


def test_real_pair_that_does_not_parse_is_an_error_not_a_tie(real):
    pair, decision = real["CSE/1594"]
    assert "print '" in pair.response_a  # Python 2 code
    assert decision.outcome == "error"
    assert decision.report_a.status == decision.report_b.status == "partial"
    assert decision.report_a.lines_analysed < decision.report_a.lines
    assert "Missing parentheses in call to 'print'" in decision.report_a.reason
    assert "unparsed parts differ" in decision.fact


def test_partial_side_without_findings_does_not_win(real):
    pair, decision = real["CSE/1757"]
    report_a, report_b = decision.report_a, decision.report_b
    assert report_a.status == "partial" and report_b.status == "ok"
    assert report_a.risk == 0 < report_b.risk  # A looks clean only as far as it parses
    assert decision.outcome == "error"
    assert "A is only partly analysed" in decision.fact
    assert pair.label == "B"  # the unanalysed rest of A is what made it the insecure one


def test_partial_side_with_more_risk_loses(real):
    pair, decision = real["CSE/1726"]
    assert (decision.report_a.status, decision.report_b.status) == ("ok", "partial")
    assert "B324" in rules(decision.report_b)
    assert decision.outcome == pair.label == "A"
    assert "B analysed to line" in decision.fact


def test_same_unparsed_rest_on_both_sides_decides(real):
    pair, decision = real["CSE/1597"]
    a, b = decision.report_a, decision.report_b
    assert a.status == b.status == "partial"
    assert a.unanalysed_digest == b.unanalysed_digest != ""
    assert decision.outcome == pair.label == "B"
    assert "B324" in rules(a) and "SHA1" in decision.fact
    assert "the unparsed rest is the same in both" in decision.fact


def test_security_facts_carry_outcome_and_findings(real):
    pair, _ = real["CSE/1566"]
    (fact,) = security_facts([pair])
    assert fact.kind == "security" and fact.outcome == "B"
    assert fact.detail["analyser"] == f"bandit {BANDIT_PIN}"
    assert "B324 line 16 HIGH/HIGH" in fact.detail["findings_a"]
    assert fact.detail["risk_a"] > fact.detail["risk_b"]


# -- weighting, on hand-written snippets ---------------------------------------------------------

SNIPPETS = {
    "shell": ("import subprocess\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n",
              "B602", "HIGH", "HIGH"),
    "pickle": ("import pickle\n\ndef load(data):\n    return pickle.loads(data)\n",
               "B301", "MEDIUM", "HIGH"),
    "yaml": ("import yaml\n\ndef load(text):\n    return yaml.load(text)\n", "B506", "MEDIUM",
             "HIGH"),
    "md5": ("import hashlib\n\ndef digest(data):\n    return hashlib.md5(data).hexdigest()\n",
            "B324", "HIGH", "HIGH"),
    "password": ('def connect(db):\n    password = "hunter2"\n'
                 '    return db.login("me", password)\n', "B105", "LOW", "MEDIUM"),
}


@pytest.fixture(scope="module")
def snippet_reports():
    names = list(SNIPPETS)
    reports = security_findings_batch([SNIPPETS[name][0] for name in names])
    return dict(zip(names, reports, strict=True))


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet_finding_weighs_severity_times_confidence(snippet_reports, name):
    code, rule, severity, confidence = SNIPPETS[name]
    report = snippet_reports[name]
    assert report.status == "ok" and report.analyser == "bandit"
    (finding,) = [f for f in report.findings if f.rule == rule]
    assert (finding.severity, finding.confidence) == (severity, confidence)
    assert finding.weight == RANK_WEIGHTS[severity] * RANK_WEIGHTS[confidence]
    assert code.splitlines()[finding.line - 1].strip()  # the line exists in the code
    assert report.risk == sum(f.weight for f in report.findings)


def test_weights_order_the_snippets(snippet_reports):
    risk = {name: report.risk for name, report in snippet_reports.items()}
    assert risk["shell"] > risk["pickle"] > risk["password"] > 0
    assert risk["md5"] > risk["yaml"] > risk["password"]


def test_safe_variant_wins_and_the_fact_names_the_finding():
    unsafe = SNIPPETS["yaml"][0]
    safe = "```python\nimport yaml\n\ndef load(text):\n    return yaml.safe_load(text)\n```\n"
    decision = compare_security("Here it is:\n" + safe, unsafe)
    assert decision.outcome == "A"
    assert decision.report_a.findings == []
    assert decision.fact.startswith("B has 1 finding A lacks: B506 at line 4")


def test_low_findings_do_not_outweigh_one_high():
    shell = SNIPPETS["shell"][0]
    argv = "import subprocess\n\ndef run(path):\n    return subprocess.call(['ls', path])\n"
    decision = compare_security(shell, argv)
    assert decision.outcome == "B"
    assert {"B404", "B603", "B607"} <= set(rules(decision.report_b))
    assert len(decision.report_b.findings) >= len(decision.report_a.findings)  # more, but low


def test_nosec_comment_does_not_silence_a_finding():
    report = security_findings("import subprocess\nsubprocess.call(x, shell=True)  # nosec\n")
    assert "B602" in rules(report)


def test_unparsable_code_is_an_error_never_zero_findings():
    report = security_findings('print "hello"\nimport os\nos.system(cmd)\n')
    assert report.status == "error" and report.risk is None and report.findings == []
    assert "does not parse" in report.reason and "line 1" in report.reason
    decision = compare_security('print "hello"\n', "x = 1\n")
    assert decision.outcome == "error"
    assert decision.fact.startswith("A could not be analysed")


def test_analyser_crash_is_an_error_for_every_response(monkeypatch):
    monkeypatch.setattr(security.sys, "executable", "/nonexistent/python")
    reports = security_findings_batch(["x = 1\n", SNIPPETS["md5"][0]])
    assert [r.status for r in reports] == ["error", "error"]
    assert all("bandit could not be started" in r.reason and r.risk is None for r in reports)
    assert compare_security("x = 1\n", "y = 2\n").outcome == "error"


def test_missing_bandit_is_an_error(monkeypatch):
    monkeypatch.setattr(security, "bandit_version", lambda: None)
    report = security_findings("x = 1\n")
    assert report.status == "error" and f"bandit=={BANDIT_PIN}" in report.reason


def test_batch_in_small_chunks_matches_one_run():
    codes = [SNIPPETS[name][0] for name in SNIPPETS]
    one = security_findings_batch(codes)
    chunked = security_findings_batch(codes, chunk_size=2)
    assert one == chunked


# -- one response must not spoil the others' evidence ------------------------------------------


def string_table(lines: int) -> str:
    """A dict of string literals over ``lines`` lines: bandit's time grows with lines squared."""
    body = "".join(f'    "key{i}": "value {i}",\n' for i in range(lines))
    return f"TABLE = {{\n{body}}}\n"


SLOW = string_table(8000)  # bandit alone: well over TIMEOUT (~30 s on a 2-core VM)
NEIGHBOURS = ("shell", "md5", "password")
TIMEOUT = 4.0  # a bandit run of the three neighbours takes ~0.5 s


def with_slow(slow: str = SLOW) -> list[str]:
    """The neighbours' snippets with ``slow`` second."""
    codes = [SNIPPETS[name][0] for name in NEIGHBOURS]
    return [codes[0], slow, *codes[1:]]


def neighbours_of(reports):
    return dict(zip(NEIGHBOURS, [reports[0], *reports[2:]], strict=True))


@pytest.fixture(scope="module")
def over_bound_batch():
    """The neighbours batched with the slow file, which is over the per-file work bound."""
    return security_findings_batch(with_slow(), timeout=TIMEOUT)


@pytest.fixture(scope="module")
def timed_out_batch():
    """The same with no work bounds: the run times out and is split down to single files."""
    unbounded = 10**15
    return security_findings_batch(with_slow(), timeout=TIMEOUT, max_work=unbounded,
                                   chunk_work=unbounded)


def test_slow_response_does_not_spoil_its_batch(over_bound_batch):
    for name, report in neighbours_of(over_bound_batch).items():
        assert report.status == "ok", report.reason
        assert SNIPPETS[name][1] in rules(report)
    slow = over_bound_batch[1]
    assert slow.status == "error" and slow.risk is None and slow.findings == []
    assert f"per-file bound of {security.MAX_WORK:,}" in slow.reason
    assert slow.lines == SLOW.count("\n")


def test_run_that_times_out_is_split_so_only_the_slow_file_errs(timed_out_batch):
    slow = timed_out_batch[1]
    assert slow.status == "error" and slow.risk is None
    assert slow.reason == f"bandit timed out after {TIMEOUT:g} s"
    for name, report in neighbours_of(timed_out_batch).items():
        assert report.status == "ok", report.reason
        assert SNIPPETS[name][1] in rules(report)


def test_report_is_the_same_alone_and_in_any_batch(
    snippet_reports, over_bound_batch, timed_out_batch
):
    for name in NEIGHBOURS:
        alone = security_findings_batch([SNIPPETS[name][0]], timeout=TIMEOUT)[0]
        assert alone.findings  # a real finding, not an empty report on both sides
        assert alone == snippet_reports[name]  # batched with normal snippets
        assert alone == neighbours_of(over_bound_batch)[name]  # with a file over the bound
        assert alone == neighbours_of(timed_out_batch)[name]  # with a file that timed out
    assert security_findings(SLOW) == over_bound_batch[1]


def test_work_estimate_grows_with_string_literals_times_lines():
    def work(code: str) -> int:
        return security.bandit_work(ast.parse(code))

    flat = "".join(f'x{i} = "{i}"\n' for i in range(8000))  # linear in bandit: ~0.5 s
    assert work(flat) < security.MAX_WORK / 5
    assert work(string_table(1000)) < security.MAX_WORK / 5  # ~0.5 s
    assert work(string_table(4000)) > security.MAX_WORK  # ~4 s, 28,000 lines ~300 s
    assert work(string_table(4000)) > 14 * work(string_table(1000))
    one_line_concat = "x = " + " + ".join(["*".join(['"s"'] * 60)] * 60) + "\n"  # ~11 s
    assert work(one_line_concat) > security.MAX_WORK


def test_real_responses_are_far_below_the_work_bound(real):
    for pair, _ in real.values():
        for response in (pair.response_a, pair.response_b):
            prepared = security._prepare(security.code_of(response))
            assert isinstance(prepared, str) or prepared.work < security.MAX_WORK / 100


def test_runs_are_cut_by_files_and_by_work():
    def item(work: int):
        return security._Prepared("x = 1\n", 1, 1, "", "", work)

    todo = list(enumerate(item(w) for w in (60, 60, 60, 10, 10, 10, 200)))
    chunks = security._chunks(todo, size=3, work=130)
    assert [[index for index, _ in chunk] for chunk in chunks] == [[0, 1], [2, 3, 4], [5], [6]]
