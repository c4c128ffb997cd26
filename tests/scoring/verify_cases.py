"""Pass/fail examples for every VeriCode instruction, checked with the real Ruff.

Each case: a name, the response, the instruction id, its parameters, the expected status,
a fragment the reason must contain (empty for a pass) and the verification profile
(``reference``, the default, or ``strict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LONG_LINE = "values = [" + ", ".join(str(n) for n in range(100, 126)) + "]\n"  # 139 chars
NESTED = """\
def pick(rows):
    for row in rows:
        if row:
            return row
    return None
"""
BRANCHY = """\
def grade(score):
    if score > 90:
        return "A"
    if score > 80:
        return "B"
    if score > 70:
        return "C"
    return "F"
"""
LOCALS = """\
def area(width, height):
    double_width = width * 2
    double_height = height * 2
    total = double_width * double_height
    return total // 4
"""
BOOLEAN = """\
def ok(first, second, third):
    if first and second and third:
        return True
    return False
"""
GOOGLE_DOC = '''\
"""Tools."""


def add(first, second):
    """Add two numbers.

    Args:
        first: The first number.
        second: The second number.

    Returns:
        The sum.
    """
    return first + second
'''
COMMENT = "# " + ("a comment that keeps going " * 3).strip()
LONG_COMMENT = COMMENT + "\nvalue = 1\n"
LINE_85 = "name = '" + "a" * 76 + "'\n"  # 85 characters
PANDAS = "import pandas as pd\n\n"
TRY_INT = "def f(x):\n    try:\n        return int(x)\n"
TRY_OPEN = "def f(p):\n    try:\n        return open(p).read()\n"
WIDE = "x = [" + "1, " * 33 + "1]\n"
STATEMENTS = (
    "def steps(x):\n" + "".join(f"    x = x + {n}\n" for n in range(1, 10)) + "    return x\n"
)


@dataclass(frozen=True)
class Case:
    """One example."""

    name: str
    response: str
    instruction: str
    expected: str
    reason: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    profile: str = "reference"


CASES = [
    # style_1: PEP 8 (stable pycodestyle E/W; reference: Ruff's 88 and no W505, strict 79 / 72)
    Case("style_1-pass", "def f(x):\n    return x is None\n", "style_1", "pass"),
    Case("style_1-fail", "def f(x):\n    return x == None\n", "style_1", "fail", "E711 line 2"),
    Case(
        "style_1-fail-long", LONG_LINE, "style_1", "fail", "E501 line 1: Line too long (139 > 88)"
    ),
    Case("style_1-pass-85", LINE_85, "style_1", "pass"),
    Case("style_1-pass-doc", LONG_COMMENT, "style_1", "pass"),
    Case(
        "style_1-strict-fail-long",
        LONG_LINE,
        "style_1",
        "fail",
        "E501 line 1: Line too long (139 > 79)",
        profile="strict",
    ),
    Case("style_1-strict-fail-85", LINE_85, "style_1", "fail", "(85 > 79)", profile="strict"),
    Case(
        "style_1-strict-fail-doc",
        LONG_COMMENT,
        "style_1",
        "fail",
        f"W505 line 1: Doc line too long ({len(COMMENT)} > 72)",
        profile="strict",
    ),
    # `no-qa` comments: honoured by the reference, ignored by strict
    Case("style_1-pass-noqa", "def f(x):\n    return x == None  # no" "qa\n", "style_1", "pass"),
    Case(
        "style_1-strict-fail-noqa",
        "def f(x):\n    return x == None  # no" "qa: E711\n",
        "style_1",
        "fail",
        "E711 line 2",
        profile="strict",
    ),
    # Python 3.12 syntax: Ruff's default target parses it; strict pins py311
    Case("logic_1-pass-py312", "type Pair = tuple[int, int]\n", "logic_1", "pass"),
    Case(
        "logic_1-strict-fail-py312",
        "type Pair = tuple[int, int]\n",
        "logic_1",
        "fail",
        "does not parse",
        profile="strict",
    ),
    # style_2: isort
    Case("style_2-pass", "import os\nimport sys\n\nprint(os, sys)\n", "style_2", "pass"),
    Case(
        "style_2-fail",
        "import sys\nimport os\n\nprint(os, sys)\n",
        "style_2",
        "fail",
        "I001 line 1",
    ),
    # style_3: max line length, parameterised
    Case(
        "style_3-fail-79",
        LONG_LINE,
        "style_3",
        "fail",
        "E501 line 1: Line too long (139 > 79)",
        {"line_length": 79},
    ),
    Case("style_3-fail-120", LONG_LINE, "style_3", "fail", "(139 > 120)", {"line_length": 120}),
    Case(
        "style_3-pass-120",
        "x = [" + "1, " * 33 + "1]\n",
        "style_3",
        "pass",
        "",
        {"line_length": 120},
    ),
    Case(
        "style_3-fail-88",
        "x = [" + "1, " * 33 + "1]\n",
        "style_3",
        "fail",
        f"({len(WIDE) - 1} > 88)",
        {"line_length": 88},
    ),
    Case(
        "style_3-default",
        "x = [" + "1, " * 33 + "1]\n",
        "style_3",
        "fail",
        f"({len(WIDE) - 1} > 79)",
    ),
    # style_4: trailing commas
    Case("style_4-pass", "x = [\n    1,\n    2,\n]\n", "style_4", "pass"),
    Case("style_4-fail", "x = [\n    1,\n    2\n]\n", "style_4", "fail", "COM812 line 3"),
    # style_5: double quotes
    Case("style_5-pass", 'x = "a"\ny = \'say "hi"\'\n', "style_5", "pass"),
    Case("style_5-fail", "x = 'a'\n", "style_5", "fail", "Q000 line 1"),
    # style_6: lowercase locals
    Case("style_6-pass", "def f():\n    my_var = 1\n    return my_var\n", "style_6", "pass"),
    Case(
        "style_6-fail",
        "def f():\n    MyVar = 1\n    return MyVar\n",
        "style_6",
        "fail",
        "N806 line 2",
    ),
    # style_7: redundant open modes
    Case("style_7-pass", "def f(p):\n    return open(p).read()\n", "style_7", "pass"),
    Case(
        "style_7-fail",
        'def f(p):\n    return open(p, "r").read()\n',
        "style_7",
        "fail",
        "UP015 line 2",
    ),
    # style_8: magic values
    Case("style_8-pass", "LIMIT = 42\n\n\ndef f(x):\n    return x > LIMIT\n", "style_8", "pass"),
    Case("style_8-fail", "def f(x):\n    return x > 42\n", "style_8", "fail", "PLR2004 line 2"),
    # style_9: unused unpacked variables
    Case("style_9-pass", "def f(x):\n    q, _r = divmod(x, 2)\n    return q\n", "style_9", "pass"),
    Case(
        "style_9-fail",
        "def f(x):\n    q, r = divmod(x, 2)\n    return q\n",
        "style_9",
        "fail",
        "RUF059 line 2",
    ),
    # logic_1: pyflakes
    Case("logic_1-pass", "import os\n\nprint(os.sep)\n", "logic_1", "pass"),
    Case("logic_1-fail", "import os\n\nprint(1)\n", "logic_1", "fail", "F401 line 1"),
    # logic_2: nesting depth (preview PLR1702), parameterised: NESTED nests 2 blocks
    Case(
        "logic_2-fail-1",
        NESTED,
        "logic_2",
        "fail",
        "PLR1702 line 2: Too many nested blocks (2 > 1)",
        {"max_nested_blocks": 1},
    ),
    Case("logic_2-pass-2", NESTED, "logic_2", "pass", "", {"max_nested_blocks": 2}),
    Case("logic_2-pass-5", NESTED, "logic_2", "pass", "", {"max_nested_blocks": 5}),
    # logic_3: branches, parameterised: BRANCHY has 3 branches
    Case(
        "logic_3-fail-2",
        BRANCHY,
        "logic_3",
        "fail",
        "PLR0912 line 1: Too many branches (3 > 2)",
        {"max_branches": 2},
    ),
    Case("logic_3-pass-10", BRANCHY, "logic_3", "pass", "", {"max_branches": 10}),
    Case("logic_3-pass-3", BRANCHY, "logic_3", "pass", "", {"max_branches": 3}),
    # logic_4: statements, parameterised: Ruff counts 9 in STATEMENTS
    Case(
        "logic_4-fail-3",
        STATEMENTS,
        "logic_4",
        "fail",
        "PLR0915 line 1: Too many statements (9 > 3)",
        {"max_statements": 3},
    ),
    Case("logic_4-fail-default", STATEMENTS, "logic_4", "fail", "(9 > 6)"),
    Case("logic_4-pass-9", STATEMENTS, "logic_4", "pass", "", {"max_statements": 9}),
    Case("logic_4-pass-50", STATEMENTS, "logic_4", "pass", "", {"max_statements": 50}),
    Case("logic_4-pass-default", "def f(x):\n    return x\n", "logic_4", "pass"),
    # logic_5: locals (preview PLR0914), parameterised: LOCALS has 3 locals
    Case(
        "logic_5-fail-1",
        LOCALS,
        "logic_5",
        "fail",
        "PLR0914 line 1: Too many local variables (3 > 1)",
        {"max_locals": 1},
    ),
    Case("logic_5-fail-2", LOCALS, "logic_5", "fail", "(3 > 2)", {"max_locals": 2}),
    Case("logic_5-pass-20", LOCALS, "logic_5", "pass", "", {"max_locals": 20}),
    # logic_6: redundant return/else
    Case("logic_6-pass", "def f(x):\n    return x + 1\n", "logic_6", "pass"),
    Case(
        "logic_6-fail",
        "def f(x):\n    y = x + 1\n    return y\n",
        "logic_6",
        "fail",
        "RET504 line 3",
    ),
    Case(
        "logic_6-fail-else",
        "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n",
        "logic_6",
        "fail",
        "RET505 line 4",
    ),
    # logic_7: cyclomatic complexity, parameterised: BRANCHY has complexity 4
    Case(
        "logic_7-fail-1",
        BRANCHY,
        "logic_7",
        "fail",
        "C901 line 1: `grade` is too complex (4 > 1)",
        {"max_complexity": 1},
    ),
    Case("logic_7-fail-3", BRANCHY, "logic_7", "fail", "(4 > 3)", {"max_complexity": 3}),
    Case("logic_7-pass-15", BRANCHY, "logic_7", "pass", "", {"max_complexity": 15}),
    # logic_8: comprehensions over loops
    Case("logic_8-pass", "def f(xs):\n    return [x * 2 for x in xs]\n", "logic_8", "pass"),
    Case(
        "logic_8-fail",
        "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x * 2)\n    return out\n",
        "logic_8",
        "fail",
        "PERF401 line 4",
    ),
    # logic_9: boolean sub-expressions (preview PLR0916), parameterised: BOOLEAN has 3
    Case(
        "logic_9-fail-1",
        BOOLEAN,
        "logic_9",
        "fail",
        "PLR0916 line 2: Too many Boolean expressions (3 > 1)",
        {"max_bool_expr": 1},
    ),
    Case("logic_9-pass-3", BOOLEAN, "logic_9", "pass", "", {"max_bool_expr": 3}),
    Case("logic_9-fail-2", BOOLEAN, "logic_9", "fail", "(3 > 2)", {"max_bool_expr": 2}),
    # doc_1: full annotations
    Case(
        "doc_1-pass",
        "def f(x: int, *args: int, **kwargs: str) -> int:\n    return x\n",
        "doc_1",
        "pass",
    ),
    Case(
        "doc_1-fail", "def f(x, *args, **kwargs):\n    return x\n", "doc_1", "fail", "ANN001 line 1"
    ),
    Case(
        "doc_1-fail-any",
        "from typing import Any\n\n\ndef f(x: Any) -> int:\n    return 1\n",
        "doc_1",
        "fail",
        "ANN401 line 4",
    ),
    # doc_2: docstring/comment line length, parameterised: LONG_COMMENT is 86 characters
    Case(
        "doc_2-fail-50",
        LONG_COMMENT,
        "doc_2",
        "fail",
        f"W505 line 1: Doc line too long ({len(COMMENT)} > 50)",
        {"line_length": 50},
    ),
    Case("doc_2-fail-72", LONG_COMMENT, "doc_2", "fail", f"({len(COMMENT)} > 72)"),
    Case("doc_2-pass-88", LONG_COMMENT, "doc_2", "pass", "", {"line_length": 88}),
    Case("doc_2-pass-88-old-name", LONG_COMMENT, "doc_2", "pass", "", {"max_doc_length": 88}),
    Case(
        "doc_2-pass-inline",
        "value = 1  # " + "an inline comment, not a doc line " * 3 + "\n",
        "doc_2",
        "pass",
        "",
        {"max_doc_length": 50},
    ),
    # doc_3: docstring convention, parameterised
    Case("doc_3-pass-google", GOOGLE_DOC, "doc_3", "pass", "", {"convention": "google"}),
    Case("doc_3-fail-numpy", GOOGLE_DOC, "doc_3", "fail", "D407", {"convention": "numpy"}),
    Case(
        "doc_3-fail-missing",
        "def add(a, b):\n    return a + b\n",
        "doc_3",
        "fail",
        "D100 line 1",
        {"convention": "pep257"},
    ),
    Case(
        "doc_3-pass-pep257",
        '"""Tools."""\n\n\ndef add(a, b):\n    """Return the sum."""\n    return a + b\n',
        "doc_3",
        "pass",
    ),
    # doc_4: the whole response is code
    Case("doc_4-pass", "def f(x):\n    return x\n", "doc_4", "pass"),
    Case(
        "doc_4-fail-fenced",
        "```python\ndef f(x):\n    return x\n```\n",
        "doc_4",
        "fail",
        "not Python",
    ),
    Case("doc_4-pass-empty", "", "doc_4", "pass"),
    Case("doc_4-strict-fail-empty", " \n", "doc_4", "fail", "empty", profile="strict"),
    Case(
        "doc_4-fail-prose",
        "Here you go:\n\n```python\ndef f(x):\n    return x\n```\n",
        "doc_4",
        "fail",
        "not Python",
    ),
    # doc_5: no comments, no docstrings
    Case("doc_5-pass", 'def f(x):\n    return "# not a comment"\n', "doc_5", "pass"),
    Case(
        "doc_5-fail-comment",
        "def f(x):\n    # double it\n    return x * 2\n",
        "doc_5",
        "fail",
        "comment at line 2",
    ),
    Case(
        "doc_5-fail-docstring",
        'def f(x):\n    """Double it."""\n    return x * 2\n',
        "doc_5",
        "fail",
        "docstring of function f at line 2",
    ),
    # doc_6: a code block followed by a json block
    Case(
        "doc_6-pass",
        '```python\nx = 1\n```\n\n```json\n{"function": "f", "summary": "s"}\n```\n',
        "doc_6",
        "pass",
    ),
    Case("doc_6-fail-none", "```python\nx = 1\n```\n", "doc_6", "fail", "not exactly"),
    Case(
        "doc_6-fail-invalid",
        '```python\nx = 1\n```\n```json\n{"a": }\n```\n',
        "doc_6",
        "fail",
        "not valid JSON",
    ),
    Case(
        "doc_6-fail-order",
        '```json\n{"a": 1}\n```\n```python\nx = 1\n```\n',
        "doc_6",
        "fail",
        "not exactly",
    ),
    Case("doc_6-pass-list", "```python\nx = 1\n```\n```json\n[1, 2]\n```\n", "doc_6", "pass"),
    Case(
        "doc_6-fail-prose",
        'Here:\n```python\nx = 1\n```\n```json\n{"a": 1}\n```\n',
        "doc_6",
        "fail",
        "not exactly",
    ),
    Case(
        "doc_6-strict-pass-prose",
        'Here:\n```py\nx = 1\n```\nand\n```json\n{"a": 1}\n```\n',
        "doc_6",
        "pass",
        profile="strict",
    ),
    Case(
        "doc_6-strict-fail-order",
        '```json\n{"a": 1}\n```\n```python\nx = 1\n```\n',
        "doc_6",
        "fail",
        "no fenced json block",
        profile="strict",
    ),
    Case(
        "doc_6-strict-fail-list",
        "```python\nx = 1\n```\n```json\n[1, 2]\n```\n",
        "doc_6",
        "fail",
        "not an object",
        profile="strict",
    ),
    # error_1: exception chaining
    Case(
        "error_1-pass",
        TRY_INT + "    except ValueError as err:\n        raise TypeError(x) from err\n",
        "error_1",
        "pass",
    ),
    Case(
        "error_1-fail",
        TRY_INT + "    except ValueError:\n        raise TypeError(x)\n",
        "error_1",
        "fail",
        "B904 line 5",
    ),
    # error_2: no literal messages
    Case(
        "error_2-pass",
        'def f():\n    msg = "bad value"\n    raise ValueError(msg)\n',
        "error_2",
        "pass",
    ),
    Case(
        "error_2-fail",
        'def f():\n    raise ValueError("bad value")\n',
        "error_2",
        "fail",
        "EM101 line 2",
    ),
    Case(
        "error_2-fail-f",
        'def f(x):\n    raise ValueError(f"bad value {x}")\n',
        "error_2",
        "fail",
        "EM102 line 2",
    ),
    # error_3: OSError
    Case(
        "error_3-pass",
        TRY_OPEN + "    except OSError:\n        return ''\n",
        "error_3",
        "pass",
    ),
    Case(
        "error_3-fail",
        TRY_OPEN + "    except IOError:\n        return ''\n",
        "error_3",
        "fail",
        "UP024 line 4",
    ),
    # error_4: no long messages at raise sites
    Case(
        "error_4-pass",
        "class BadValueError(ValueError):\n    pass\n\n\ndef f():\n    raise BadValueError\n",
        "error_4",
        "pass",
    ),
    Case(
        "error_4-fail",
        'def f(x):\n    raise ValueError(f"the value {x} is not allowed here")\n',
        "error_4",
        "fail",
        "TRY003 line 2",
    ),
    # library_1: pathlib
    Case(
        "library_1-pass",
        "from pathlib import Path\n\n\ndef f(p):\n    return Path(p).exists()\n",
        "library_1",
        "pass",
    ),
    Case(
        "library_1-fail",
        "import os\n\n\ndef f(p):\n    return os.path.exists(p)\n",
        "library_1",
        "fail",
        "PTH110 line 5",
    ),
    # library_2: idiomatic pandas (Ruff PD002/PD011 and the generic df name check)
    Case(
        "library_2-pass",
        PANDAS + "\ndef f(df):\n    table = pd.DataFrame(df)\n    return table.to_numpy()\n",
        "library_2",
        "pass",
    ),
    Case(
        "library_2-fail-df",
        "import pandas as pd\n\ndf = pd.DataFrame()\n",
        "library_2",
        "fail",
        "PD901 line 3",
    ),
    Case(
        "library_2-fail-values",
        PANDAS + "def f(table):\n    return table.values\n",
        "library_2",
        "fail",
        "PD011 line 4",
    ),
    Case(
        "library_2-fail-inplace",
        PANDAS + "def f(table):\n    table.dropna(inplace=True)\n",
        "library_2",
        "fail",
        "PD002 line 4",
    ),
    # PD901 flagged a plain `df = ...` only: loops, tuples, with, augmented, chained pass
    Case(
        "library_2-pass-df-not-a-single-target",
        "import pandas as pd\n\nfor df in []:\n    pass\na, df = 1, 2\ndf += 1\n"
        "x = df = 3\ndf: int = 4\nwith open('f') as df:\n    pass\n",
        "library_2",
        "pass",
    ),
    Case(
        "library_2-fail-df-nested",
        "import pandas as pd\n\ndef f():\n    if True:\n        df = 1\n    return df\n",
        "library_2",
        "fail",
        "PD901 line 5",
    ),
    # suppression comments: Ruff decides for the reference; strict ignores them
    Case(
        "library_2-pass-df-silenced",
        'import pandas as pd\n\ndf = """\nmulti\n"""  # no' 'qa: PD901\n',
        "library_2",
        "pass",
    ),
    Case(
        "library_2-strict-fail-df-silenced",
        'import pandas as pd\n\ndf = """\nmulti\n"""  # no' 'qa: PD901\n',
        "library_2",
        "fail",
        "PD901 line 3",
        profile="strict",
    ),
    Case(
        "library_2-fail-df-other-code-silenced",
        "import pandas as pd\n\ndf = 1  # no" "qa: E741\n",
        "library_2",
        "fail",
        "PD901 line 3",
    ),
    # pandas-vet only looks at code that imports pandas
    Case(
        "library_2-pass-no-pandas", "def f(table):\n    return table.values\n", "library_2", "pass"
    ),
]
