#!/usr/bin/env bash
# Reproduce the Vibe Checker paper's optimal IF/Func weights (arXiv 2510.07315, §4.5:
# Fig. 5 = BigCodeBench/LiveCodeBench, IF at 1 instruction, LMArena coding Elo with style
# control; the appendix adds Kendall and the Elo without style control) from the paper's
# own per-model table, with `prefjudge correlate`. IF at 3 and 5 instructions go beyond it.
#
# Usage: scripts/correlate_paper.sh [DATA_DIR (default ../shared/data)] [OUT_DIR]
# Writes per-configuration JSON/CSV/PNG and the summary table OUT_DIR/table.md
# (the committed copy is scripts/correlate_paper_table.md).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-../shared/data}/paper/swe_if_scores/model_scores_with_arena.csv"
OUT="${2:-${TMPDIR:-/tmp}/prefjudge_correlate_paper}"
PREFJUDGE="${PREFJUDGE:-prefjudge}"
mkdir -p "$OUT"

for bench in bcb lcb; do
  for elo in arena_default arena_remove_style_control; do
    $PREFJUDGE correlate "$DATA" \
      --func-col "${bench}_func" \
      --if-col "${bench}_if_1" --if-col "${bench}_if_3" --if-col "${bench}_if_5" \
      --elo-col "$elo" --step 0.1 --bootstrap 1000 --seed 0 \
      --json "$OUT/${bench}_${elo}.json" -o "$OUT/${bench}_${elo}.csv" \
      --plot "$OUT/${bench}_${elo}.png" > "$OUT/${bench}_${elo}.txt" 2>&1
  done
done

python - "$OUT" <<'PY'
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
bench_names = {"bcb": "BigCodeBench", "lcb": "LiveCodeBench"}
elo_names = {"arena_default": "with style control", "arena_remove_style_control": "without"}
lines = [
    "| benchmark | LMArena coding Elo | IF at | models | Pearson α* (r, 95% CI) "
    "| Spearman α* (r, 95% CI) | Kendall α* (r, 95% CI) |",
    "|---|---|---|---|---|---|---|",
]
for bench in ("bcb", "lcb"):
    for elo in ("arena_default", "arena_remove_style_control"):
        payload = json.loads((out / f"{bench}_{elo}.json").read_text())
        for part in payload["per_if"]:
            cells = []
            for kind in ("pearson", "spearman", "kendall"):
                best = part["best"][kind]
                lo, hi = best["alpha_ci"]
                cells.append(f"**{best['alpha']:.1f}** ({best['r']:.3f}, "
                             f"{best['ci'][0]:.2f}–{best['ci'][1]:.2f}; α* CI {lo:.1f}–{hi:.1f})")
            k = part["if_col"].rsplit("_", 1)[1]
            lines.append(f"| {bench_names[bench]} | {elo_names[elo]} | {k} | "
                         f"{len(part['models'])} | " + " | ".join(cells) + " |")
table = "\n".join(lines)
(out / "table.md").write_text(table + "\n", encoding="utf-8")
print(table)
PY
