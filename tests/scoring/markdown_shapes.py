"""Markdown response shapes around a piece of code, as chat models write them.

Each shape turns a code string into a whole response: only a fence, a bare fence, prose
around it, an "Example usage" block or an output block after it, a bash block before it,
a json block after it (object or array), a truncated response whose fence never closes,
prose with no code, an empty response, a ```` ```py ```` tag, CRLF line endings, and a
fence indented inside a list item. Which sentences, commands and values fill a shape is
drawn from small fixed lists by a :class:`random.Random` seeded with the seed, the shape
and the code, so a given ``(code, shape, seed)`` always gives the same response.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable

SHAPES: tuple[str, ...] = (
    "fence",
    "bare_fence",
    "prose_around",
    "usage_after",
    "output_after",
    "bash_first",
    "json_object_after",
    "json_array_after",
    "unclosed_fence",
    "prose_only",
    "empty",
    "py_tag",
    "crlf",
    "indented_fence",
)

_INTROS = (
    "Here is the implementation:",
    "Sure! Below is a solution that follows the requirements.",
    "The following function does what you asked.",
    "Certainly. Here's the complete code:",
)
_OUTROS = (
    "The function runs in linear time.",
    "Let me know if you need anything else!",
    "This handles the edge cases as well, such as empty input.",
    "Explanation: the helper keeps a running total and returns it at the end.",
)
_BASH = (
    "pip install numpy pandas",
    "python -m pip install --upgrade requests",
    "python solution.py",
    "pytest -q",
)
_OUTPUTS = ("42", "[1, 2, 3]\nTrue", "Done.", "{'a': 1}")
_PROSE_ONLY = (
    "I cannot write this without knowing the input format. Could you share an example?",
    "The task is ambiguous: should the result be sorted or keep the input order?",
    "This function is not possible to implement safely as specified.",
)
_SUMMARIES = (
    {"function": "task_func", "summary": "computes the requested result"},
    {"complexity": "O(n)", "uses_pandas": False},
    {"notes": ["handles empty input", "raises ValueError on bad types"]},
)
_NAME = re.compile(r"^(?:async\s+)?def\s+(\w+)", re.MULTILINE)


def _block(code: str) -> str:
    """Code followed by exactly the newline a fence needs (nothing added if present)."""
    return code if code.endswith("\n") else code + "\n"


def _call(code: str, rng: random.Random) -> str:
    names = _NAME.findall(code)
    name = names[0] if names else "main"
    argument = rng.choice(("", "[1, 2, 3]", "'example'", "10"))
    return f"result = {name}({argument})\nprint(result)\n"


def _fence(code: str, _: random.Random) -> str:
    return f"```python\n{_block(code)}```\n"


def _bare_fence(code: str, _: random.Random) -> str:
    return f"```\n{_block(code)}```\n"


def _prose_around(code: str, rng: random.Random) -> str:
    return f"{rng.choice(_INTROS)}\n\n```python\n{_block(code)}```\n\n{rng.choice(_OUTROS)}\n"


def _usage_after(code: str, rng: random.Random) -> str:
    return (
        f"{rng.choice(_INTROS)}\n\n```python\n{_block(code)}```\n\n"
        f"Example usage:\n\n```python\n{_call(code, rng)}```\n"
    )


def _output_after(code: str, rng: random.Random) -> str:
    tag = rng.choice(("text", ""))
    return f"```python\n{_block(code)}```\n\nOutput:\n\n```{tag}\n{rng.choice(_OUTPUTS)}\n```\n"


def _bash_first(code: str, rng: random.Random) -> str:
    return (
        f"First install the dependencies:\n\n```bash\n{rng.choice(_BASH)}\n```\n\n"
        f"Then use this code:\n\n```python\n{_block(code)}```\n"
    )


def _json_object_after(code: str, rng: random.Random) -> str:
    summary = json.dumps(rng.choice(_SUMMARIES), indent=rng.choice((None, 2)))
    return f"```python\n{_block(code)}```\n\n```json\n{summary}\n```\n"


def _json_array_after(code: str, rng: random.Random) -> str:
    values = rng.choice((["O(n)", "O(1)"], [1, 2, 3], [{"case": "empty", "result": 0}]))
    return f"```python\n{_block(code)}```\n```json\n{json.dumps(values)}\n```"


def _unclosed_fence(code: str, rng: random.Random) -> str:
    lines = code.splitlines(keepends=True)
    keep = max(1, rng.randint(len(lines) // 2, max(len(lines) - 1, len(lines) // 2)))
    return f"{rng.choice(_INTROS)}\n\n```python\n{''.join(lines[:keep])}"


def _prose_only(_: str, rng: random.Random) -> str:
    return rng.choice(_PROSE_ONLY) + "\n"


def _empty(_: str, __: random.Random) -> str:
    return ""


def _py_tag(code: str, rng: random.Random) -> str:
    return f"{rng.choice(_INTROS)}\n\n```py\n{_block(code)}```\n"


def _crlf(code: str, rng: random.Random) -> str:
    text = f"{rng.choice(_INTROS)}\n\n```python\n{_block(code)}```\n"
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _indented_fence(code: str, rng: random.Random) -> str:
    body = "".join(
        f"   {line}" if line.strip() else line for line in _block(code).splitlines(keepends=True)
    )
    return f"1. {rng.choice(_INTROS)}\n\n   ```python\n{body}   ```\n\n2. {rng.choice(_OUTROS)}\n"


_BUILDERS: dict[str, Callable[[str, random.Random], str]] = {
    "fence": _fence,
    "bare_fence": _bare_fence,
    "prose_around": _prose_around,
    "usage_after": _usage_after,
    "output_after": _output_after,
    "bash_first": _bash_first,
    "json_object_after": _json_object_after,
    "json_array_after": _json_array_after,
    "unclosed_fence": _unclosed_fence,
    "prose_only": _prose_only,
    "empty": _empty,
    "py_tag": _py_tag,
    "crlf": _crlf,
    "indented_fence": _indented_fence,
}


def _rng(code: str, shape: str, seed: int) -> random.Random:
    digest = hashlib.sha256(f"{seed}\0{shape}\0{code}".encode("utf-8", "surrogatepass"))
    return random.Random(int.from_bytes(digest.digest()[:8], "big"))


def wrap(code: str, shape: str, seed: int = 0) -> str:
    """The response of one shape around ``code``.

    Args:
        code: Python source (any text).
        shape: One of :data:`SHAPES`.
        seed: Chooses the filler text; the same arguments always give the same response.

    Returns:
        The whole response.

    Raises:
        KeyError: For an unknown shape.
    """
    return _BUILDERS[shape](code, _rng(code, shape, seed))


def all_shapes(code: str, seed: int = 0) -> list[tuple[str, str]]:
    """``(shape, response)`` for every shape, in the order of :data:`SHAPES`.

    Args:
        code: Python source.
        seed: Chooses the filler text.

    Returns:
        One response per shape.
    """
    return [(shape, wrap(code, shape, seed)) for shape in SHAPES]


def some_shapes(code: str, count: int, seed: int = 0) -> list[tuple[str, str]]:
    """``(shape, response)`` for ``count`` shapes drawn for this code, ``fence`` always in.

    Args:
        code: Python source.
        count: How many shapes (at least 1, at most ``len(SHAPES)``).
        seed: Chooses the shapes and the filler text.

    Returns:
        The responses, in the order of :data:`SHAPES`.
    """
    rng = _rng(code, "choose", seed)
    others = rng.sample(SHAPES[1:], max(0, min(count, len(SHAPES)) - 1))
    return [
        (shape, wrap(code, shape, seed)) for shape in SHAPES if shape == "fence" or shape in others
    ]
