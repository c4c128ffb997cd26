"""``prefjudge score --export evalplus|bigcodebench DIR``, read back by the peers' own code.

Neither peer has a reader function for its result files apart from the path of its
``evaluate`` that finds them already there: given ``--samples`` whose result file exists,
EvalPlus's ``evalplus.evaluate.evaluate`` loads ``eval_results.json`` (through
``compatible_eval_result``) and computes and prints pass@k from ``base_status`` /
``plus_status``; BigCodeBench's ``bigcodebench.evaluate.evaluate`` (``execution="local"``)
loads ``*_eval_results.json``, computes pass@k from ``status``, and compares it key by key
with the ``*_pass_at_k.json`` it finds (printing ``Warning: K is different from the saved
one`` for each difference; a key it does not compute is a ``KeyError``), then asks on
stdin whether to overwrite (answered ``n``). That path is what runs here, in the peer's
venv, with the settings the export declares (BigCodeBench: split and subset from the file
name, ``calibrated`` from the pass@k file, ground truth not checked, as the export says).
The check passes when it runs without error, prints the pass@1 that prefjudge's own
scored records give, no saved value differs, every sample's status read back is
prefjudge's verdict (by the peer's name for it: :data:`_PEER_NAMES`), and each entry has
the fields the peer writes itself.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from peers.runs import Key, Verdict, log_tail, timed
from peers.venvs import PeerEnv

EVALPLUS_READ = r"""
import contextlib, io, json, sys
from evalplus.evaluate import evaluate
from evalplus.eval import compatible_eval_result
dataset, samples, result = sys.argv[1:4]
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    evaluate(dataset=dataset, samples=samples)
data = compatible_eval_result(json.load(open(result)))
print(json.dumps({"printed": printed.getvalue(), "eval": data["eval"]}))
"""

BIGCODEBENCH_READ = r"""
import contextlib, io, json, sys
from bigcodebench.evaluate import evaluate
from bigcodebench.eval import compatible_eval_result
samples, result, split, subset = sys.argv[1:5]
saved = json.load(open(result.replace("eval_results.json", "pass_at_k.json")))
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    evaluate(split=split, subset=subset, samples=samples, execution="local", parallel=1,
             calibrated=saved.get("calibrated", True), no_gt=True)
data = compatible_eval_result(json.load(open(result)))
print(json.dumps({"printed": printed.getvalue(), "eval": data["eval"]}))
"""

_PEER_NAMES = {"timeout": {"timeout", "fail"}, "error": {"fail"}}
"""What a prefjudge status may be called in a peer's file: EvalPlus calls a set stopped at
an input over its time limit ``fail`` (``timeout`` only when the whole run is stopped);
neither peer has a status for "could not judge", so prefjudge's ``error`` is ``fail``."""

EVALPLUS_FIELDS = ("task_id", "solution", "base_status", "plus_status", "base_fail_tests",
                   "plus_fail_tests")
BIGCODEBENCH_FIELDS = ("task_id", "solution", "status", "details")


def export_supported(prefjudge: list[str]) -> bool:
    """Whether ``prefjudge score --help`` lists ``--export``."""
    proc = subprocess.run([*prefjudge, "score", "--help"], capture_output=True, text=True,
                          check=False)
    return "--export" in proc.stdout


def pass_at_1(verdicts: dict[Key, Verdict]) -> float:
    """Mean over tasks of the share of samples that pass (pass@1 with n samples per task)."""
    per_task: dict[str, list[bool]] = {}
    for (task_id, _), verdict in verdicts.items():
        per_task.setdefault(task_id, []).append(verdict.status == "pass")
    return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task) if per_task else 0.0


def _samples_argument(folder: Path) -> tuple[Path, Path] | None:
    """The ``--samples`` a peer would be given for the results under ``folder``, and the file.

    ``X_eval_results.json`` is what the peer writes for ``--samples X.jsonl``;
    ``eval_results.json`` what it writes for a folder of samples.
    """
    found = sorted(folder.rglob("*eval_results.json"))
    if not found:
        return None
    result = found[0]
    if result.name == "eval_results.json":
        return result.parent, result
    return result.with_name(result.name.replace("_eval_results.json", ".jsonl")), result


def _split_subset(name: str) -> tuple[str, str]:
    """BigCodeBench's split and subset from a file name (``...--bigcodebench-hard-complete--``)."""
    found = re.search(r"--bigcodebench-(hard-)?(complete|instruct)--", name)
    if not found:
        return "instruct", "full"
    return found.group(2), "hard" if found.group(1) else "full"


def check(peer: PeerEnv, fmt: str, dataset: str, export_dir: Path, ours: dict[Key, Verdict],
          env: dict[str, str], log: Path) -> dict:
    """Read an export back with the peer's own code; compare with prefjudge's verdicts.

    Args:
        peer: The peer's venv.
        fmt: ``evalplus`` or ``bigcodebench``.
        dataset: EvalPlus's ``--dataset`` (``humaneval``, ``mbpp``); unused for BigCodeBench.
        export_dir: The folder ``--export`` wrote.
        ours: prefjudge's verdicts from the same run's scored records.
        env: The peer's environment; for BigCodeBench, its dataset override must name the
            task file prefjudge read (the export's ``failed_tasks`` lists its tasks).
        log: Where the reader's output goes.

    Returns:
        ``{"ok": bool, "problems": [...], "pass@1": {...}, "files": [...]}``.
    """
    files = sorted(str(p.relative_to(export_dir)) for p in export_dir.rglob("*") if p.is_file())
    found = _samples_argument(export_dir)
    if found is None:
        return {"ok": False, "problems": [f"no eval_results.json or *_eval_results.json in "
                                          f"{export_dir} (files: {files})"], "files": files}
    samples, result = found
    problems: list[str] = []
    if fmt == "evalplus":
        cmd = [str(peer.python), "-c", EVALPLUS_READ, dataset, str(samples), str(result)]
        stdin = None
    else:
        pass_at_k = result.with_name(result.name.replace("eval_results.json", "pass_at_k.json"))
        if not pass_at_k.exists():
            return {"ok": False, "problems": [f"{pass_at_k.name} missing"], "files": files}
        cmd = [str(peer.python), "-c", BIGCODEBENCH_READ, str(samples), str(result),
               *_split_subset(result.name)]
        stdin = "n\nn\n"  # keep the files: do not overwrite results or pass@k
    rc, _, _ = timed(cmd, env, export_dir, log, stdin=stdin)
    text = log.read_text(encoding="utf-8", errors="replace")
    payload = None
    for line in reversed(text.splitlines()):
        if line.startswith('{"printed"'):
            payload = json.loads(line)
            break
    if rc != 0 or payload is None:
        return {"ok": False, "problems": [f"the peer's reader failed (exit {rc}): "
                                          f"{log_tail(log, 8)}"], "files": files}
    printed = payload["printed"]
    expected = pass_at_1(ours)
    # EvalPlus prints base then base+extra pass@1; the last pass@1 is the one with plus.
    values = [float(v) for v in re.findall(r"pass@1:\s*([0-9.]+)", printed)]
    if not values:
        problems.append("the peer printed no pass@1")
    elif abs(values[-1] - expected) > 0.0005:
        problems.append(f"the peer computes pass@1 {values[-1]:.3f} from the export, "
                        f"prefjudge's records give {expected:.3f}")
    problems += [f"the peer says: {m}" for m in re.findall(r"Warning: .*", printed)]
    fields = EVALPLUS_FIELDS if fmt == "evalplus" else BIGCODEBENCH_FIELDS
    for task_id, entries in payload["eval"].items():
        for n, entry in enumerate(entries):
            missing = [f for f in fields if f not in entry]
            if missing:
                problems.append(f"{task_id}#{n}: fields {missing} missing")
            mine = ours.get((task_id, n))
            if mine is None:
                problems.append(f"{task_id}#{n}: in the export, not in prefjudge's records")
                continue
            if fmt == "evalplus":
                got = {"base": entry.get("base_status"), "plus": entry.get("plus_status")}
                if mine.sets and any(got[k] not in _PEER_NAMES.get(mine.sets.get(k) or "",
                                                                   {mine.sets.get(k)})
                                     for k in got):
                    problems.append(f"{task_id}#{n}: exported {got}, prefjudge {mine.sets}")
                overall = got["base"] if got["base"] != "pass" else got["plus"]
                if (overall == "pass") != (mine.status == "pass"):
                    problems.append(f"{task_id}#{n}: exported {got}, prefjudge {mine.status}")
            elif entry.get("status") not in _PEER_NAMES.get(mine.status, {mine.status}):
                problems.append(f"{task_id}#{n}: exported {entry.get('status')}, "
                                f"prefjudge {mine.status}")
    exported = {(t, n) for t, entries in payload["eval"].items() for n in range(len(entries))}
    problems += [f"{t}#{n}: in prefjudge's records, not in the export"
                 for t, n in sorted(set(ours) - exported)]
    return {"ok": not problems, "problems": problems,
            "pass@1": {"peer_reads": values[-1] if values else None, "prefjudge": expected},
            "files": files}
