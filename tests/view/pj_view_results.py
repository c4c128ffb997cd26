"""A results folder made by the real commands, for the viewer tests (see conftest.py).

``prefjudge score`` scores the bundled sample (unit tests included), ``prefjudge judge``
and ``prefjudge pair`` judge pairs with a scripted judge (the judge code is real; only the
model is a function), ``prefjudge rank`` turns the verdicts into ``leaderboard.csv``, and a
second scored file holds hostile records, an over-long response and broken lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from pj_cli import invoke
from pj_scripted_backend import ScriptedBackend, criterion_ids, shown, stage_of, user_text

from prefjudge.backends import Request
from prefjudge.records import Pair

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"

HOSTILE = ("</script><script>window.PWNED=1;document.documentElement.setAttribute('data-pwned',"
           "'1')</script><img src=x onerror=\"window.PWNED=2;document.documentElement."
           "setAttribute('data-pwned','2')\">\n</textarea><!-- \u2028 &amp; \"><b>bold</b>")
HOSTILE_MODEL = '"><img src=x onerror="window.PWNED=3">'
HOSTILE_CRITERION = "Avoids </script><script>window.PWNED=4</script> tricks"
GOOD = "def f(xs):\n    # GOOD: handles the empty list\n    return sum(xs) if xs else 0\n"
BAD = "def f(xs):\n    return xs[0] + sum(xs[1:])\n"
CRITERIA = ["Handles the empty list", "Shown first is better", "Has a docstring",
            HOSTILE_CRITERION]
LONG = 30_000


def _side(request: Request) -> str:
    a, b = "GOOD" in shown(request, "A"), "GOOD" in shown(request, "B")
    return "A" if a and not b else "B" if b and not a else "tie"


def scripted_judge(request: Request) -> Any:
    """c1 follows the GOOD response, c2 prefers whatever is shown first (it does not survive
    the swap), c3 is a tie (refined), c4 (hostile text) follows the GOOD response."""
    stage = stage_of(request)
    if stage == "criteria":
        return {"criteria": CRITERIA}
    if stage in ("judging", "refined judging"):
        verdicts = {}
        for cid in criterion_ids(request):
            verdict = "A" if cid == "c2" else "tie" if cid.startswith("c3") else _side(request)
            verdicts[cid] = {"reason": f"because of {cid} </textarea>", "verdict": verdict}
        return {"verdicts": verdicts}
    if stage == "refine":
        tied = re.findall(r"^(c\d+): ", user_text(request).split("## Tied criteria")[1], re.M)
        return {"splits": {t: [f"{t} finer one", f"{t} finer two"] for t in tied}}
    if stage in ("synthesis", "monolithic"):
        body = {"reason": f"the {_side(request)} side handles the empty list </script>",
                "verdict": _side(request)}
        if stage == "synthesis":
            body["decisive"] = ["c1", "c4"]
        return body
    raise AssertionError(stage)


@dataclass
class Built:
    """The results folder and what the commands said."""

    root: Path
    page: Path
    view: Result
    scored: list[dict[str, Any]]
    verdicts: list[dict[str, Any]]
    hostile_id: str


def _pairs() -> list[Pair]:
    return [
        Pair(pair_id="p0", task_id="t0", instruction="Write f(xs). </textarea>",
             response_a=HOSTILE, response_b=BAD, model_a="alpha", model_b="beta",
             evidence_a=["tests: pass </script>"], evidence_b=["tests: fail"]),
        Pair(pair_id="p1", task_id="t1", instruction="Write f(xs) returning the sum.",
             response_a=GOOD, response_b=BAD, model_a="alpha", model_b="beta"),
        Pair(pair_id="p2", task_id="t2", instruction="Write f(xs) returning the sum.",
             response_a=BAD, response_b=GOOD, model_a="beta", model_b="alpha"),
        Pair(pair_id="p3", task_id="t3", instruction="Write f(xs) returning the sum.",
             response_a=GOOD, response_b=BAD, model_a="alpha", model_b=HOSTILE_MODEL),
        Pair(pair_id="p4", task_id="t4", instruction="Write f(xs) returning the sum.",
             response_a=BAD, response_b=GOOD, model_a=HOSTILE_MODEL, model_b="beta"),
    ]


def _extra_scored(first: dict[str, Any]) -> tuple[str, str]:
    """A second scored file: a hostile record, an over-long one and unusable lines."""
    hostile = json.loads(json.dumps(first))
    hostile.update(id="hostile-1", model="hostile-model", response=HOSTILE)
    hostile["instruction_results"][0]["reason"] = "reason </script><script>window.PWNED=5"
    hostile["func"] = {"status": "fail", "detail": HOSTILE}
    long = json.loads(json.dumps(first))
    long.update(id="long-1", model="long-model", response="x" * LONG)
    invalid = {"task_id": "sample/x", "model": "m", "response": 5, "func": None}
    lines = [json.dumps(hostile), '{"task_id": "broken', json.dumps(long), json.dumps(invalid)]
    return "\n".join(lines) + "\n", "hostile-1"


def build_results(root: Path, work: Path) -> Built:
    """Fill ``root`` with real command outputs (``work`` holds scratch files)."""
    scores = root / "scores" / "scores.jsonl"
    invoke("score", SAMPLE / "generations.jsonl", "-o", scores, "--bootstrap", 50, ok=True)
    scored = [json.loads(line) for line in scores.read_text("utf-8").splitlines()]
    text, hostile_id = _extra_scored(scored[0])
    (root / "scores" / "more_verdicts.jsonl").write_text(text, encoding="utf-8")

    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(p.model_dump_json() + "\n" for p in _pairs()), encoding="utf-8")
    backend = ScriptedBackend(scripted_judge)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("prefjudge.cli.judge_cmd.open_backend", lambda config: backend)
        invoke("judge", pairs, "-o", root / "verdicts.jsonl", "--min-criteria", 3, ok=True)
        a, b = work / "a.py", work / "b.py"
        a.write_text(GOOD, encoding="utf-8")
        b.write_text(HOSTILE, encoding="utf-8")
        invoke("pair", a, b, "--instruction", "Write f(xs).", "--method", "monolithic",
               "-o", root / "single" / "pair-verdict.json", ok=True)
    invoke("rank", root / "verdicts.jsonl", "-o", root / "leaderboard.csv", "--alpha", 0.01,
           "--bootstrap", 20, ok=True)
    verdicts = [json.loads(line) for line in
                (root / "verdicts.jsonl").read_text("utf-8").splitlines()]
    view = invoke("view", root, ok=True)
    return Built(root=root, page=root / "view.html", view=view, scored=scored,
                verdicts=verdicts, hostile_id=hostile_id)
