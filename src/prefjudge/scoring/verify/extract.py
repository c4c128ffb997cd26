"""Finding code in a model's response: fenced Markdown blocks and the code to check.

The reference profile reads the first fenced block of any language, as the SWE-IF
reference does; the strict profile the last fenced Python block (see
:mod:`prefjudge.scoring.profiles`). Under the strict profile the checks read that code with
its isort action comments neutralised (:func:`checked_code`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prefjudge.scoring.profiles import Profile, get_profile

PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})

# A line that could open or close a fence: up to 3 spaces, 3+ backticks, an info string.
_FENCE_LINE = re.compile(r"^( {0,3})(`{3,})([^`\n]*)$", re.MULTILINE)
# An isort action comment's marker (``isort: skip_file``, ``isort:skip``, ``ruff: isort: off``).
_ISORT_MARKER = re.compile(r"isort:", re.IGNORECASE)


@dataclass(frozen=True)
class FencedBlock:
    """One fenced Markdown code block.

    Attributes:
        tag: Lower-cased first word of the info string (``""`` for a bare fence).
        text: The block's content (indentation of an indented fence removed).
        start_line: 1-based line of the opening fence.
        closed: False when the response ended before a closing fence.
    """

    tag: str
    text: str
    start_line: int
    closed: bool = True

    @property
    def is_python(self) -> bool:
        """True for ```` ```python ```` (or py, python3) and bare ```` ``` ```` blocks."""
        return self.tag in PYTHON_TAGS


def fenced_blocks(response: str) -> list[FencedBlock]:
    """All backtick-fenced blocks of a Markdown response, in order.

    A fence is three or more backticks at the start of a line (up to three spaces of
    indentation) followed by an optional info string; it closes at a line of at least as
    many backticks and nothing else. A block left open at the end of the response (a
    truncated generation) runs to the end.

    Args:
        response: Model response.

    Returns:
        The blocks, in order of appearance.
    """
    if "```" not in response:
        return []
    fences = list(_FENCE_LINE.finditer(response))
    blocks = []
    index = 0
    while index < len(fences):
        opening = fences[index]
        indent, ticks, info = opening.group(1), opening.group(2), opening.group(3).split()
        closing = index + 1
        while closing < len(fences) and not _closes(fences[closing], len(ticks)):
            closing += 1
        body_end = fences[closing].start() if closing < len(fences) else len(response)
        text = response[opening.end() + 1 : body_end] if opening.end() < body_end else ""
        if indent:
            text = "".join(_dedent(line, len(indent)) for line in text.splitlines(keepends=True))
        line = response.count("\n", 0, opening.start()) + 1
        tag = info[0].lower() if info else ""
        blocks.append(FencedBlock(tag, text, line, closing < len(fences)))
        index = closing + 1
    return blocks


def _closes(fence: re.Match[str], length: int) -> bool:
    return not fence.group(3).strip() and len(fence.group(2)) >= length


def extract_code(response: str, profile: str | Profile | None = None) -> str:
    """The code to check in a response, the way the verification profile reads it.

    Args:
        response: Model response.
        profile: Verification profile (name or object; the default profile for None).

    Returns:
        Python source text.
    """
    if get_profile(profile).extraction == "first_fence":
        return first_fenced_code(response)
    return last_python_block(response)


def code_of(response: str, profile: str | Profile | None = None, *,
            is_code: bool = False) -> str:
    """The code to run: the response itself when it is code, else :func:`extract_code`.

    A sample file's ``solution`` (EvalPlus, BigCodeBench) is code, never Markdown: a
    fenced example inside one of its docstrings is part of it, not the code to run.

    Args:
        response: Model response, or a sample's code.
        profile: Verification profile (how code is found in Markdown).
        is_code: The response is code as a whole
            (:attr:`~prefjudge.records.Generation.response_is_code`).

    Returns:
        Python source text.
    """
    return response if is_code else extract_code(response, profile)


def checked_code(code: str, profile: str | Profile | None = None) -> str:
    """The code as the profile's instruction checks read it.

    Under a profile that does not honour isort action comments (strict), they are
    neutralised (:func:`neutralise_isort_actions`); otherwise the code is returned as is.

    Args:
        code: The code to check (from :func:`code_of`, or given by the caller).
        profile: Verification profile (name or object; the default profile for None).

    Returns:
        Python source text.
    """
    if get_profile(profile).honour_isort_actions:
        return code
    return neutralise_isort_actions(code)


def neutralise_isort_actions(code: str) -> str:
    """``code`` with every isort action comment turned into a plain comment.

    Ruff exempts imports from its isort rules (I001, style_2) on ``# isort: skip_file``,
    ``# isort: off``, ``# isort: skip``, ``# isort: split`` and their ``# ruff: isort:``
    forms, even with ``--ignore-noqa``. Each ``isort:`` that follows a ``#`` on its line
    (every comment does; a string holding ``#`` then ``isort:`` is changed too, which no
    check reads) becomes ``isort-``: the same length, so line lengths and the positions of
    findings do not change. The comment is then no pragma to Ruff either: E501 measures a
    line that ends in it like any other (it leaves a trailing pragma comment out).

    Args:
        code: Python source text.

    Returns:
        The text, isort action comments neutralised.
    """
    if "isort" not in code.lower():
        return code
    lines = code.splitlines(keepends=True)
    for index, line in enumerate(lines):
        hash_at = line.find("#")
        if hash_at >= 0 and _ISORT_MARKER.search(line, hash_at):
            lines[index] = line[:hash_at] + _ISORT_MARKER.sub(
                lambda found: found.group()[:-1] + "-", line[hash_at:])
    return "".join(lines)


# Three backticks, an optional word and newline, then the shortest text up to the next
# three backticks: anywhere in the text, not only at line starts. This is how the SWE-IF
# reference generator finds code (code_generator.py, _extract_code_from_response).
_ANY_FENCE = re.compile(r"```(?:\w*\n)?(.*?)```", re.DOTALL)


def first_fenced_code(response: str) -> str:
    """The SWE-IF reference's code: the first fenced block with non-blank content.

    Any language tag counts (a ```` ```bash ```` block first is the code); the block is
    returned as written (not stripped). A response with fences that are all blank gives
    ``""``; a response with no complete fence is code as a whole.

    Args:
        response: Model response.

    Returns:
        Python source text (or whatever the first block holds).
    """
    if "```" not in response:
        return response
    found = False
    for match in _ANY_FENCE.finditer(response):
        found = True
        if match.group(1).strip():
            return match.group(1)
    return "" if found else response


def last_python_block(response: str) -> str:
    """The strict profile's code: the last fenced Python block.

    A ```` ```python ````, ```` ```py ```` or bare ```` ``` ```` block, found by the
    Markdown fence rules of :func:`fenced_blocks` (an unclosed last block runs to the end);
    the whole response when it has no such block.

    Args:
        response: Model response.

    Returns:
        Python source text.
    """
    python_blocks = [block for block in fenced_blocks(response) if block.is_python]
    return python_blocks[-1].text if python_blocks else response


def _dedent(line: str, width: int) -> str:
    removable = len(line) - len(line.lstrip(" "))
    return line[min(width, removable) :]
