"""The docs promise only what the repository ships (issue 31 item 7).

A guidance set named in a README, a docs page or an example (``guidance = "guidance/NAME"``,
``--guidance guidance/NAME/``) either exists under ``guidance/`` or is built, in the same
document, by a ``prefjudge guidance build ... -o guidance/NAME/`` command the reader runs first.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    [
        ROOT / "README.md",
        ROOT / "guidance" / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "examples").glob("*.toml"),
    ]
)
GUIDANCE_NAME = re.compile(r"guidance/([A-Za-z0-9_.-]+)")
BUILT = re.compile(r"guidance build\b[^\n]*?-o\s+(?:\.\./)?guidance/([A-Za-z0-9_.-]+)")


def _named_sets(text: str) -> set[str]:
    names = set(GUIDANCE_NAME.findall(text))
    return {name.rstrip(".") for name in names if name not in {"NAME", "README.md"}}


def test_the_scan_sees_the_documents_and_a_missing_set_would_be_caught():
    assert (ROOT / "README.md") in DOCUMENTS and any(p.suffix == ".toml" for p in DOCUMENTS)
    text = 'guidance = "../guidance/hpag"\nprefjudge guidance build x.jsonl -o guidance/mine/\n'
    assert _named_sets(text) - set(BUILT.findall(text)) == {"hpag"}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_guidance_set_a_document_names_is_shipped_or_built_there(document: Path):
    text = document.read_text(encoding="utf-8")
    shipped = {p.name for p in (ROOT / "guidance").iterdir() if p.is_dir()}
    built = set(BUILT.findall(text))
    if document.suffix == ".toml":  # an example points at a set the README builds
        built |= set(BUILT.findall((ROOT / "README.md").read_text(encoding="utf-8")))
    promised = _named_sets(text) - shipped - built
    assert not promised, (
        f"{document.relative_to(ROOT)} names guidance set(s) {sorted(promised)} that are "
        "neither shipped under guidance/ nor built by a `guidance build -o` in the document"
    )
