"""``prefjudge view``: one self-contained HTML page to look at a results folder.

The page (:func:`build_page` over what :func:`load_results` read) shows, top to bottom:

* **what was found**: each part (``leaderboard.csv``, scored samples, judge verdicts) found
  or not, every file looked at with the kind of record it holds (told from the records'
  fields, not the file's name), and the lines that could not be used, with file, line and
  reason;
* **the leaderboard** (``leaderboard.csv``, any columns) as a table;
* **scored samples** (``prefjudge score`` output): one row per sample with model, task,
  protocol and k, its instruction checks and its test status; opening a row shows the
  prompt (the record's, else its task's), the response, each instruction check with its
  category, status and reason, the functional test status with its detail or output,
  checks per turn for multi-turn runs, and any other field the record has;
* **judged pairs** (``prefjudge judge`` / ``pair -o`` / ``judge-eval`` verdicts): one row
  per verdict; opening it shows the final verdict and reasons in both orders, both
  responses side by side with their evidence (from the pair file, matched on pair id),
  every criterion with its forward, swapped and surviving verdict and reasons, and the
  decisive criteria. A field a record lacks is shown as absent, never filled in.

Filters (model, task, instruction category, test status, instruction checks, verdict, free
text) run in the page; the URL fragment holds them (``view.html#model=X&status=fail``), and
``#pair=ID`` or ``#sample=ID`` opens one item. The page needs no network: CSS and script are
inline, a Content-Security-Policy forbids every fetch and any script but its own, record
text is escaped or set with ``textContent``, and texts longer than a limit are cut with a
visible ``[cut N chars]`` note, so a run of 100,000 samples still gives a usable page.
"""

from __future__ import annotations

from prefjudge.view.load import Results, SourceFile, load_results
from prefjudge.view.page import DEFAULT_MAX_CHARS, Page, build_page, script_json

__all__ = [
    "DEFAULT_MAX_CHARS",
    "Page",
    "Results",
    "SourceFile",
    "build_page",
    "load_results",
    "script_json",
]
