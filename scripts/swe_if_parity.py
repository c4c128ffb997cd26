"""Compare prefjudge's instruction checks with the SWE-IF reference checkers on real code.

The reference is the independent port in ``tests/scoring/swe_if_reference.py`` of the
paper authors' checkers (maszhongming/SWE-IF at 767d190). The code: every BigCodeBench
canonical solution (``complete_prompt + canonical_solution``) and a seeded sample of
EvalPerf model solutions, each wrapped in every Markdown response shape of
``tests/scoring/markdown_shapes.py``. Every one of the 30 instructions is checked on every
response with its default parameters; the parametrised ones also with each alternative
value of ``PARAM_VALUES`` (on the ``fence`` shape, or on every shape with
``--params all``).

Prints a table per instruction (checks compared, agreements, differences) and the total
agreement, writes every difference to the JSON report given by ``--out``, and exits 1
when there is any difference (0 when none).

Usage::

    .venv/bin/python scripts/swe_if_parity.py --n 300 --seed 0 --out parity.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "scoring"))

from markdown_shapes import all_shapes  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from swe_if_reference import (  # noqa: E402
    CHECK_IDS,
    SOURCE,
    Case,
    Comparison,
    OurItems,
    bigcodebench_solutions,
    compare,
    crash_localised,
    evalperf_solutions,
    param_variants,
    verdict_name,
)

from prefjudge.records import InstructionRef  # noqa: E402
from prefjudge.scoring.verify import ruff_version, verify_batch  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="EvalPerf solutions to sample")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and the shapes")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Ruff processes")
    parser.add_argument("--profile", default="reference", help="verify_batch's profile")
    parser.add_argument("--out", type=Path, help="JSON report with every difference")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument(
        "--bigcodebench", type=int, default=None, help="only the first N BigCodeBench tasks"
    )
    parser.add_argument(
        "--params",
        choices=("fence", "all"),
        default="fence",
        help="shapes that get the alternative parameter values (default: the fence shape)",
    )
    parser.add_argument("--chunk", type=int, default=40, help="codes compared per batch")
    return parser.parse_args(argv)


def make_ours(profile: str, console: Console):
    """verify_batch as the harness wants it, with the profile when verify_batch takes one."""
    kwargs: dict[str, Any] = {}
    if "profile" in inspect.signature(verify_batch).parameters:
        kwargs["profile"] = profile
    elif profile != "reference":
        raise SystemExit(f"verify_batch takes no profile=, cannot compare profile {profile!r}")
    else:
        console.print("[yellow]verify_batch takes no profile= yet: comparing its default[/]")

    def verdicts(items: OurItems) -> list[list[tuple[str, str]]]:
        batch = [(text, [InstructionRef(id=i, params=p) for i, p in refs]) for text, refs in items]
        return [[(r.status, r.reason) for r in row] for row in verify_batch(batch, **kwargs)]

    ours = crash_localised(verdicts)

    return ours, "profile" in kwargs


def cases_for(name: str, code: str, seed: int, params_everywhere: bool) -> list[Case]:
    cases = []
    for shape, response in all_shapes(code, seed):
        for check_id in CHECK_IDS:
            variants = param_variants(check_id) if params_everywhere or shape == "fence" else [{}]
            for params in variants:
                cases.append(Case.of(f"{name} @ {shape}", response, check_id, params))
    return cases


def as_json(comparison: Comparison) -> dict[str, Any]:
    case = comparison.case
    return {
        "check_id": case.check_id,
        "params": dict(case.params),
        "label": case.label,
        "reference": verdict_name(comparison.reference.passed),
        "reference_detail": comparison.reference.detail,
        "ours": comparison.status,
        "reason": comparison.reason,
        "response": case.response,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(stderr=True)
    if not args.data.is_dir():
        console.print(f"[red]no shared data at {args.data}[/]")
        return 2
    ours, profile_used = make_ours(args.profile, console)
    codes = [(f"bcb:{name}", code) for name, code in bigcodebench_solutions(args.data)]
    codes = codes[: args.bigcodebench] if args.bigcodebench is not None else codes
    sample = evalperf_solutions(args.data, args.n, args.seed)
    codes += [(f"evalperf:{name}", code) for name, code in sample]
    compared: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    differences: list[Comparison] = []
    started = time.monotonic()
    for start in range(0, len(codes), args.chunk):
        chunk = codes[start : start + args.chunk]
        cases = [
            case
            for name, code in chunk
            for case in cases_for(name, code, args.seed, args.params == "all")
        ]
        for comparison in compare(cases, ours, workers=args.workers):
            compared[comparison.case.check_id] += 1
            if comparison.agrees:
                agreed[comparison.case.check_id] += 1
            else:
                differences.append(comparison)
        done = min(start + args.chunk, len(codes))
        console.print(
            f"{done}/{len(codes)} codes, {sum(compared.values())} checks, "
            f"{len(differences)} differences, {time.monotonic() - started:.0f} s"
        )

    table = Table(title=f"prefjudge ({args.profile}) vs SWE-IF reference ({SOURCE})")
    for column in ("id", "compared", "agree", "differ", "agreement"):
        table.add_column(column, justify="left" if column == "id" else "right")
    for check_id in CHECK_IDS:
        total, same = compared[check_id], agreed[check_id]
        share = f"{same / total:.2%}" if total else "-"
        style = "red" if total != same else None
        table.add_row(check_id, str(total), str(same), str(total - same), share, style=style)
    total, same = sum(compared.values()), sum(agreed.values())
    table.add_section()
    table.add_row("all", str(total), str(same), str(total - same), f"{same / max(total, 1):.4%}")
    Console().print(table)
    for comparison in differences[:10]:
        console.print(comparison.render(), markup=False, highlight=False)
    if args.out is not None:
        report = {
            "reference": SOURCE,
            "ruff": ruff_version(),
            "profile": args.profile if profile_used else None,
            "seed": args.seed,
            "evalperf_sample": args.n,
            "codes": len(codes),
            "checks": total,
            "agreements": same,
            "by_id": {
                check_id: {"compared": compared[check_id], "agree": agreed[check_id]}
                for check_id in CHECK_IDS
            },
            "differences": [as_json(comparison) for comparison in differences],
        }
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
        console.print(f"report: {args.out}")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
