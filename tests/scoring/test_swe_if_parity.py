"""Parity of prefjudge's instruction checks with the SWE-IF reference checkers.

The reference is an independent port (``swe_if_reference.py``) of the paper authors'
checkers (maszhongming/SWE-IF at 767d190). prefjudge's ``verify_batch`` with the
``reference`` profile must give the same verdict on every case: our ``pass`` where the
reference says True, our ``fail`` where it says False. An ``error`` is a difference too,
except for the few cases of :data:`ALLOWED_ERRORS`, where neither side can run Ruff.

Three sources of cases, compared per instruction id:

1. hand-written cases where the two could plausibly differ (``# noqa`` comments, every
   kind of ``df`` assignment, Python 3.12 syntax, lines just over 79/88, doc lines over 72,
   odd fences, doc_6 shapes...), each under the default and alternative parameters;
2. real code (../shared/data): a seeded sample of BigCodeBench canonical solutions and
   EvalPerf model solutions, wrapped in Markdown response shapes (``markdown_shapes.py``);
3. opt-in (``PREFJUDGE_PARITY_FULL=1``): a much larger real-code sample, every shape and
   every parameter value. ``scripts/swe_if_parity.py`` runs the largest comparison.
"""

from __future__ import annotations

import inspect
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_shapes import SHAPES, all_shapes, some_shapes, wrap
from swe_if_reference import (
    CHECK_IDS,
    PARAM_DEFAULTS,
    PARAM_VALUES,
    Case,
    Comparison,
    IsolatedRuff,
    OurItems,
    ReferenceCheck,
    _refuse_inherited_configuration,
    bigcodebench_solutions,
    compare,
    crash_localised,
    evalperf_solutions,
    param_variants,
    pd901_lines,
    reference_outcomes,
    reference_verdict,
    render_differences,
    solution_of,
)
from verify_cases import GOOGLE_DOC

from prefjudge.records import InstructionRef
from prefjudge.scoring.verify import verify_batch

SEED = 20240611
FULL = os.environ.get("PREFJUDGE_PARITY_FULL") == "1"
WORKERS = max(2, os.cpu_count() or 2)

# verify_batch's profile: "reference" is meant to give the reference's verdicts. An older
# verify_batch without profiles is compared as it is (its only behaviour).
ACCEPTS_PROFILE = "profile" in inspect.signature(verify_batch).parameters
PROFILE = {"profile": "reference"} if ACCEPTS_PROFILE else {}


def _verdicts(items: OurItems) -> list[list[tuple[str, str]]]:
    batch = [(text, [InstructionRef(id=i, params=p) for i, p in refs]) for text, refs in items]
    return [[(r.status, r.reason) for r in row] for row in verify_batch(batch, **PROFILE)]


ours = crash_localised(_verdicts)
"""prefjudge's verdicts; a crash is localised to its item and reported as ``crash``."""


def fence(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}```\n"


# ------------------------------------------------------------------------------ code pieces

SMALL = "import os\n\n\ndef size(path):\n    x = os.path.getsize(path)\n    return x\n"
CLEAN = '''\
def add(first: int, second: int) -> int:
    """Return the sum of two numbers."""
    return first + second
'''
DIRTY = """\
import sys
import os
import pandas as pd
def Process(data, *args, **kwargs):
    '''process the data'''
    MyValue = open('data.txt', 'r').read()
    try:
        n = int(data)
    except ValueError:
        raise RuntimeError(f"bad value {data}")
    except IOError:
        raise
    if n > 42 and n < 100 or n == 7:
        for i in range(n):
            if i:
                while i:
                    i -= 1
    result = []
    for item in data:
        result.append(item)
    a, b = divmod(n, 2)
    df = pd.read_csv(MyValue)
    df.dropna(inplace=True)
    values = df.values
    x = os.path.join('a', 'b')  # a comment long enough to go past seventy-two chars
    return result, values, x, a
"""
WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 4


def text_of(width: int) -> str:
    """Words, exactly ``width`` characters, not ending in a space."""
    text = WORDS[:width]
    return text[:-1] + "x" if text.endswith(" ") else text


def code_line(width: int) -> str:
    """A statement line of exactly ``width`` characters with spaces in it."""
    return f"x = '{text_of(width - 6)}'\n"


def doc_with_line(width: int) -> str:
    """A function whose docstring has a body line of exactly ``width`` characters."""
    return f'def f():\n    """Summary.\n\n    {text_of(width - 4)}\n    """\n'


def nested(depth: int) -> str:
    """A function with ``depth`` nested blocks."""
    heads = ["if x:", "for i in x:", "while i:", "with open(i) as h:", "if h:", "for j in h:"]
    lines = ["def f(x):"]
    for level in range(depth):
        lines.append("    " * (level + 1) + heads[level % len(heads)])
    lines.append("    " * (depth + 1) + "pass")
    return "\n".join(lines) + "\n    return x\n"


def branches(count: int) -> str:
    body = "".join(f"    if x == {n}:\n        return {n}\n" for n in range(count))
    return f"def f(x):\n{body}    return -1\n"


def statements(count: int) -> str:
    body = "".join(f"    x = x + {n}\n" for n in range(count - 1))
    return f"def f(x):\n{body}    return x\n"


def local_names(count: int) -> str:
    body = "".join(f"    v{n} = x + {n}\n" for n in range(count))
    total = " + ".join(f"v{n}" for n in range(count)) or "x"
    return f"def f(x):\n{body}    return {total}\n"


def complexity(count: int) -> str:
    body = "".join(f"    if x > {n}:\n        x -= 1\n" for n in range(count - 1))
    return f"def f(x):\n{body}    return x\n"


def bool_operands(count: int) -> str:
    condition = " and ".join(f"x{n}" for n in range(count))
    args = ", ".join(f"x{n}" for n in range(count))
    return f"def f({args}):\n    if {condition}:\n        return 1\n    return 0\n"


GOOGLE = GOOGLE_DOC  # the same google-style module as the verifier's own cases
NUMPY = '''\
"""Tools."""


def add(first, second):
    """Add two numbers.

    Parameters
    ----------
    first : int
        The first number.
    second : int
        The second number.

    Returns
    -------
    int
        The sum.
    """
    return first + second
'''
PEP257 = '''\
"""Tools."""


def add(first, second):
    """Add two numbers and return the sum."""
    return first + second
'''

# ------------------------------------------------------------------------------ targeted cases

# Responses compared under every instruction id (default parameters): the extraction of
# the solution, odd fences, encodings, newer syntax.
GENERAL: dict[str, str] = {
    "empty": "",
    "blank": "\n  \n",
    "only-blank-fences": "```python\n\n```\nNothing to add.\n",
    "blank-fence-then-code": "```\n\n```\n\n" + fence(SMALL),
    "space-before-info": "``` python\n" + SMALL + "```\n",
    "four-backticks": "````python\n" + SMALL + "````\n",
    "tilde-fence": "~~~python\n" + SMALL + "~~~\n",
    "inline-triple-backticks-first": "Call ```size()``` after this:\n\n" + fence(SMALL),
    "info-with-attributes": '```python title="solution.py"\n' + SMALL + "```\n",
    "cpp-block-first": "```c++\nint x = 1;\n```\n\n" + fence(SMALL),
    "python3-tag": fence(SMALL, "python3"),
    "closing-fence-on-code-line": "```python\n" + SMALL.rstrip("\n") + "```\n",
    "blank-line-before-closing-fence": "```python\n" + SMALL + "\n```\n",
    "backticks-inside-string": fence(
        "FENCE = '```'\n\n\ndef wrap(text):\n    return FENCE + text + FENCE\n"
    ),
    "two-python-blocks": fence(SMALL) + "\nor, shorter:\n\n" + fence(CLEAN),
    "raw-code": SMALL,
    "raw-code-crlf": SMALL.replace("\n", "\r\n"),
    "raw-code-lone-cr": SMALL.replace("\n", "\r"),
    "raw-code-no-final-newline": SMALL.rstrip("\n"),
    "raw-code-bom": "\ufeff" + SMALL,
    "raw-code-nul": SMALL + "NUL = '\x00'\n",
    "lone-surrogate": fence("TEXT = '\ud800'\n"),
    "tab-indented": "def f(x):\n\treturn x\n",
    "py312-type-alias": fence(
        "type Pair = tuple[int, int]\n\n\ndef first(pair: Pair) -> int:\n    return pair[0]\n"
    ),
    "py312-type-alias-raw": "type Pair = tuple[int, int]\n",
    "py312-generic-function": fence("def first[T](items: list[T]) -> T:\n    return items[0]\n"),
    "py312-fstring-quotes": fence(
        'def greet(names: list[str]) -> str:\n    return f"{", ".join(names)}"\n'
    ),
    "py311-except-star": fence(
        "def f(g):\n    try:\n        g()\n    except* ValueError:\n        return 1\n"
        "    return 0\n"
    ),
    "py310-match": fence(
        "def f(x):\n    match x:\n        case 1:\n            return 'one'\n"
        "        case _:\n            return 'many'\n"
    ),
    "nbsp-only-block": "```\n\u00a0\n```\n\n" + fence(SMALL),
    "backticks-in-prose-first": "Wrap code in ``` fences, like this:\n\n" + fence(SMALL),
    "unicode-info-string": "```pythön\n" + SMALL + "```\n",
    "space-after-info": "```python \n" + SMALL + "```\n",
    "surrogate-in-prose": "Here \ud83d is the code:\n\n" + fence(SMALL),
    "file-level-noqa": fence("# ruff: noqa\n" + DIRTY),
    "blanket-noqa-every-line": fence(
        "".join(
            line + "  # noqa\n"
            if line.strip() and not line.rstrip().endswith("'''")
            else line + "\n"
            for line in DIRTY.splitlines()
        )
    ),
}

DF_CASES = {
    "df-assign": "import pandas as pd\n\ndf = pd.DataFrame()\n",
    "df-annotated": "import pandas as pd\n\ndf: pd.DataFrame = pd.DataFrame()\n",
    "df-chained": "import pandas as pd\n\na = df = pd.DataFrame()\n",
    "df-tuple": "import pandas as pd\n\ndf, other = pd.DataFrame(), 1\n",
    "df-list-target": "import pandas as pd\n\n[df] = [pd.DataFrame()]\n",
    "df-for": "for df in frames:\n    print(df)\n",
    "df-with": "with open('f') as df:\n    print(df)\n",
    "df-augmented": "df += 1\n",
    "df-walrus": "if (df := load()) is not None:\n    print(df)\n",
    "df-parameter": "def f(df):\n    return df\n",
    "df-nested": "def f(rows):\n    if rows:\n        for row in rows:\n            df = row\n"
    "            print(df)\n",
    "df-in-class": "class Frame:\n    df = None\n",
    "df-attribute": "import pandas as pd\n\nself_df = pd.DataFrame()\nself_df.df = 1\n",
    "df-uppercase": "DF = 1\n",
    "df-semicolon": "x = 1; df = 2\n",
    "df-noqa": "df = 1  # noqa\n",
    "df-noqa-code": "df = 1  # noqa: PD901\n",
    "df-noqa-other-code": "df = 1  # noqa: E501\n",
    "df-noqa-lowercase-code": "df = 1  # noqa: pd901\n",
    "df-noqa-after-string": 'df = """\nmulti\n"""  # noqa\n',
    "df-noqa-after-paren": "df = (\n    1\n)  # noqa\n",
    "df-noqa-continuation": "df = \\\n    1  # noqa\n",
    "df-file-noqa": "# ruff: noqa: PD901\ndf = 1\n",
    "df-flake8-file-noqa": "# flake8: noqa\ndf = 1\n",
    "df-py312": "type Frame = dict[str, list[int]]\ndf = 1\n",
    "pd-inplace": "import pandas as pd\n\nframe = pd.DataFrame()\nframe.dropna(inplace=True)\n",
    "pd-values": "import pandas as pd\n\nframe = pd.DataFrame()\nvalues = frame.values\n",
    "pd-clean": "import pandas as pd\n\nframe = pd.DataFrame()\nvalues = frame.to_numpy()\n",
}

# Per instruction: code (wrapped in a ```python fence) compared under every parameter
# variant of that instruction.
TARGETED: dict[str, dict[str, str]] = {
    "style_1": {
        "clean": CLEAN,
        "line-85": code_line(85),
        "line-88": code_line(88),
        "line-89": code_line(89),
        "doc-line-80": doc_with_line(80),
        "comment-line-80": "# " + text_of(78) + "\nx = 1\n",
        "trailing-space": "x = 1 \n",
        "blank-line-at-end": "x = 1\n\n",
        "tab-indent": "if True:\n\tx = 1\n",
        "compare-none": "x = None\nif x == None:\n    pass\n",
        "compare-none-noqa": "x = None\nif x == None:  # noqa: E711\n    pass\n",
        "lambda-assign": "f = lambda x: x\n",
        "missing-whitespace": "x=1\ny = x+1\n",
        "bare-except": "try:\n    pass\nexcept:\n    pass\n",
        "bare-except-noqa": "try:\n    pass\nexcept:  # noqa\n    pass\n",
    },
    "style_2": {
        "sorted": "import os\nimport sys\n",
        "unsorted": "import sys\nimport os\n",
        "unsorted-noqa": "import sys  # noqa: I001\nimport os\n",
        "groups": "import os\n\nimport numpy as np\n",
        "groups-missing": "import numpy as np\nimport os\n",
        "future": "from __future__ import annotations\n\nimport os\n",
        "long-from-import": "from collections import ChainMap, Counter, OrderedDict, "
        "defaultdict, deque, namedtuple\n",
        "long-from-import-80": "from collections import ChainMap, Counter, OrderedDict, "
        "defaultdict, deque\n",
        "local-package": "import os\n\nimport prefjudge\nimport helpers\n",
        "isort-skip-file": "# isort: skip_file\nimport sys\nimport os\n",
        "isort-off": "# isort: off\nimport sys\nimport os\n# isort: on\n",
    },
    "style_3": {
        **{f"line-{n}": code_line(n) for n in (79, 80, 88, 89, 100, 101, 120, 121)},
        "url-comment-before-limit": "x = 1  # https://example.com/" + "a" * 90 + "\n",
        "url-comment-after-limit": "x = '" + "b" * 80 + "'  # https://example.com/a\n",
        "single-word": "# " + "a" * 130 + "\n",
        "pragma": "x = [" + "1, " * 24 + "1]  # type: ignore[assignment]\n",
        **{
            f"pragma-after-{n}": code_line(n).rstrip("\n") + "  # type: ignore\n"
            for n in (85, 95, 105, 115)
        },
        **{
            f"noqa-pragma-after-{n}": code_line(n).rstrip("\n") + "  # noqa: F401\n"
            for n in (85, 95)
        },
        "noqa": code_line(130).rstrip("\n") + "  # noqa: E501\n",
        "wide-chars": "x = '" + "資" * 45 + "'\n",
        "tab-indented": "if True:\n\tx = '" + "c" * 70 + "'\n",
        "docstring-line-95": doc_with_line(95),
    },
    "style_4": {
        "missing-comma": "x = [\n    1,\n    2\n]\n",
        "has-comma": "x = [\n    1,\n    2,\n]\n",
        "call-missing": "print(\n    1,\n    2\n)\n",
        "noqa": "x = [\n    1,\n    2  # noqa: COM812\n]\n",
        "one-line": "x = [1, 2]\n",
    },
    "style_5": {
        "single": "x = 'a'\n",
        "double": 'x = "a"\n',
        "single-with-double-inside": "x = 'say \"hi\"'\n",
        "escaped": 'x = "say \\"hi\\""\n',
        "docstring-single": "def f():\n    '''Doc.'''\n",
        "noqa": "x = 'a'  # noqa: Q000\n",
        "fstring-single": "name = \"x\"\nx = f'{name}'\n",
    },
    "style_6": {
        "camel-local": "def f():\n    myValue = 1\n    return myValue\n",
        "upper-local": "def f():\n    VALUE = 1\n    return VALUE\n",
        "module-level": "MyValue = 1\n",
        "noqa": "def f():\n    myValue = 1  # noqa: N806\n    return myValue\n",
        "snake": "def f():\n    my_value = 1\n    return my_value\n",
    },
    "style_7": {
        "mode-r": "with open('f', 'r') as h:\n    print(h.read())\n",
        "no-mode": "with open('f') as h:\n    print(h.read())\n",
        "noqa": "with open('f', 'r') as h:  # noqa: UP015\n    print(h.read())\n",
    },
    "style_8": {
        "magic": "def f(x):\n    return x > 42\n",
        "zero-one": "def f(x):\n    return x > 1\n",
        "named": "LIMIT = 42\n\n\ndef f(x):\n    return x > LIMIT\n",
        "noqa": "def f(x):\n    return x > 42  # noqa: PLR2004\n",
    },
    "style_9": {
        "unused": "def f():\n    a, b = divmod(7, 2)\n    return a\n",
        "underscore": "def f():\n    a, _b = divmod(7, 2)\n    return a\n",
        "noqa": "def f():\n    a, b = divmod(7, 2)  # noqa: RUF059\n    return a\n",
    },
    "logic_1": {
        "unused-import": "import os\n",
        "undefined": "print(value)\n",
        "fstring-no-placeholder": "x = f'plain'\n",
        "noqa": "import os  # noqa: F401\n",
        "clean": CLEAN,
        "python-first-line": "python\nx = 1\n",
    },
    "logic_2": {f"depth-{d}": nested(d) for d in (1, 2, 3, 4, 6)}
    | {"noqa": "def f(x):  # noqa: PLR1702\n" + nested(4).split("\n", 1)[1]},
    "logic_3": {f"branches-{b}": branches(b) for b in (1, 2, 3, 5, 11)}
    | {"noqa": branches(5).replace("def f(x):", "def f(x):  # noqa: PLR0912")},
    "logic_4": {f"statements-{s}": statements(s) for s in (3, 4, 6, 7, 12, 13, 50, 51)}
    | {"noqa": statements(9).replace("def f(x):", "def f(x):  # noqa: PLR0915")},
    "logic_5": {f"locals-{n}": local_names(n) for n in (1, 2, 3, 5, 6, 20, 21)}
    | {"noqa": local_names(4).replace("def f(x):", "def f(x):  # noqa: PLR0914")},
    "logic_6": {
        "assign-return": "def f():\n    x = 1\n    return x\n",
        "else-return": "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n",
        "noqa": "def f():\n    x = 1\n    return x  # noqa: RET504\n",
        "clean": "def f():\n    return 1\n",
    },
    "logic_7": {f"complexity-{c}": complexity(c) for c in (1, 2, 3, 5, 15, 16)}
    | {"noqa": complexity(4).replace("def f(x):", "def f(x):  # noqa: C901")},
    "logic_8": {
        "append-loop": "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n"
        "    return out\n",
        "comprehension": "def f(xs):\n    return list(xs)\n",
        "noqa": "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)  # noqa\n"
        "    return out\n",
    },
    "logic_9": {f"operands-{n}": bool_operands(n) for n in (1, 2, 3, 4, 6)}
    | {
        "noqa": bool_operands(3).replace(
            ":\n        return 1", ":  # noqa: PLR0916\n        return 1"
        )
    },
    "doc_1": {
        "unannotated": "def f(x):\n    return x\n",
        "annotated": "def f(x: int) -> int:\n    return x\n",
        "any": "from typing import Any\n\n\ndef f(x: Any) -> Any:\n    return x\n",
        "init": "class A:\n    def __init__(self, x: int):\n        self.x = x\n",
        "args": "def f(*args, **kwargs) -> None:\n    pass\n",
        "noqa": "def f(x):  # noqa: ANN001, ANN201\n    return x\n",
    },
    "doc_2": {
        **{f"doc-line-{n}": doc_with_line(n) for n in (59, 60, 61, 72, 73, 88, 89)},
        "comment-line-80": "# " + text_of(78) + "\nx = 1\n",
        "comment-pragma-after-65": "x = 1  # " + text_of(56) + "  # type: ignore\n",
        "comment-pragma-after-80": "x = 1  # " + text_of(71) + "  # type: ignore\n",
        "code-line-100": code_line(100),
        "doc-url": 'def f():\n    """See.\n\n    https://example.com/' + "a" * 80 + '\n    """\n',
        "doc-url-mid": 'def f():\n    """See.\n\n    '
        + text_of(60)
        + " https://example.com/"
        + "a" * 30
        + '\n    """\n',
        "noqa-on-closing-line": doc_with_line(90).replace('\n    """\n', '\n    """  # noqa\n'),
    },
    "doc_3": {
        "google": GOOGLE,
        "numpy": NUMPY,
        "pep257": PEP257,
        "missing": "def add(first, second):\n    return first + second\n",
        "no-module-docstring": 'def add(first, second):\n    """Add two numbers."""\n'
        "    return first + second\n",
        "noqa": "def add(first, second):  # noqa: D103\n    return first + second\n",
        "file-noqa": "# ruff: noqa: D\ndef add(first, second):\n    return first + second\n",
    },
    "doc_5": {
        "comment": "x = 1  # one\n",
        "docstring": CLEAN,
        "class-docstring": 'class A:\n    """Doc."""\n',
        "nested-docstring": 'def f():\n    def g():\n        """Doc."""\n    return g\n',
        "async-docstring": 'async def f():\n    """Doc."""\n',
        "hash-in-string": "x = '# not a comment'\n",
        "shebang": "#!/usr/bin/env python\nx = 1\n",
        "string-not-first": "def f():\n    x = 1\n    'not a docstring'\n    return x\n",
        "fstring-first": "def f():\n    f'''not a docstring'''\n",
        "bytes-first": "def f():\n    b'''not a docstring'''\n",
        "unterminated": "x = '''abc\n",
        "docstring-in-match-case": "def f(x):\n    match x:\n        case 1:\n"
        '            def g():\n                """Doc."""\n            return g\n',
        "docstring-in-except": 'try:\n    pass\nexcept OSError:\n    def g():\n        """D."""\n',
        "empty-docstring": 'def f():\n    """"""\n',
        "lone-cr-comment": "x = 1\r# c\ry = 2\r",
        "lone-cr-docstring": 'def f():\r    """Doc."""\r',
        "form-feed": "x = 1\n\x0c\ny = 2\n",
        "clean": "def f(x):\n    return x\n",
    },
    "error_1": {
        "no-from": "try:\n    pass\nexcept ValueError:\n    raise RuntimeError('x')\n",
        "from": "try:\n    pass\nexcept ValueError as e:\n    raise RuntimeError('x') from e\n",
        "bare-raise": "try:\n    pass\nexcept ValueError:\n    raise\n",
        "noqa": "try:\n    pass\nexcept ValueError:\n    raise RuntimeError('x')  # noqa: B904\n",
    },
    "error_2": {
        "literal": "raise ValueError('bad')\n",
        "fstring": "x = 1\nraise ValueError(f'bad {x}')\n",
        "variable": "msg = 'bad'\nraise ValueError(msg)\n",
        "noqa": "raise ValueError('bad')  # noqa: EM101\n",
    },
    "error_3": {
        "ioerror": "try:\n    pass\nexcept IOError:\n    pass\n",
        "oserror": "try:\n    pass\nexcept OSError:\n    pass\n",
        "noqa": "try:\n    pass\nexcept IOError:  # noqa: UP024\n    pass\n",
    },
    "error_4": {
        "long-message": "x = 1\nraise ValueError(f'the value {x} is not allowed here')\n",
        "short": "raise ValueError('bad')\n",
        "noqa": "x = 1\nraise ValueError(f'the value {x} is not allowed here')  # noqa: TRY003\n",
    },
    "library_1": {
        "os-path": "import os\n\nx = os.path.join('a', 'b')\n",
        "open": "with open('f') as h:\n    print(h.read())\n",
        "pathlib": "from pathlib import Path\n\nx = Path('a') / 'b'\n",
        "noqa": "import os\n\nx = os.path.join('a', 'b')  # noqa: PTH118\n",
    },
    "library_2": DF_CASES,
}

# Whole responses for the response-level checks (never wrapped).
RESPONSES: dict[str, dict[str, str]] = {
    "doc_4": {
        "raw": SMALL,
        "fenced": fence(SMALL),
        "prose": "This is just prose.\n",
        "empty": "",
        "whitespace": "   \n",
        "nul": "x = 1\x00\n",
        "unparseable": "def f(:\n",
        "py312": "type Pair = tuple[int, int]\n",
        "trailing-prose": SMALL + "\nThat's it!\n",
        "crlf": SMALL.replace("\n", "\r\n"),
    },
    "doc_6": {
        "object": fence(SMALL) + fence('{"a": 1}', "json"),
        "array": fence(SMALL) + "\n" + fence("[1, 2]", "json"),
        "string": fence(SMALL) + fence('"text"', "json"),
        "number": fence(SMALL) + fence("3", "json"),
        "nan": fence(SMALL) + fence("NaN", "json"),
        "prose-before": "Here:\n\n" + fence(SMALL) + fence("{}", "json"),
        "prose-between": fence(SMALL) + "and the summary:\n" + fence("{}", "json"),
        "prose-after": fence(SMALL) + fence("{}", "json") + "Done.\n",
        "leading-whitespace": "\n\n  " + fence(SMALL) + "\n" + fence("{}", "json") + "\n\n",
        "invalid-json": fence(SMALL) + fence("{'a': 1}", "json"),
        "trailing-comma": fence(SMALL) + fence('{"a": 1,}', "json"),
        "empty-json": fence(SMALL) + fence("", "json"),
        "json-first": fence("{}", "json") + fence(SMALL),
        "text-block-after": fence(SMALL) + fence("{}", "json") + fence("out", "text"),
        "two-python-blocks": fence(SMALL) + fence(CLEAN) + fence("{}", "json"),
        "py-tag": fence(SMALL, "py") + fence("{}", "json"),
        "Python-tag": fence(SMALL, "Python") + fence("{}", "json"),
        "json5-tag": fence(SMALL) + fence("{}", "json5"),
        "bare-second-block": fence(SMALL) + fence("{}", ""),
        "crlf": (fence(SMALL) + fence('{"a": 1}', "json")).replace("\n", "\r\n"),
        "same-line": "```python x = 1``````json {}```",
        "deep-json": fence(SMALL) + fence("[" * 100000 + "]" * 100000, "json"),
        "huge-int-json": fence(SMALL) + fence("1" * 5000, "json"),
        "backticks-in-code": fence("FENCE = '```'\n") + fence("{}", "json"),
        "code-only": fence(SMALL),
    },
}

# Ruff overflows its stack on this (exit status 134 / SIGABRT).
RUFF_CRASH = fence("x = " + "-" * 10000 + "1\n")
CRASH_IDS = ("style_1", "style_3", "logic_1", "logic_7", "doc_3", "library_2")  # a few: slow


@dataclass(frozen=True)
class Allowed:
    """Checks where neither side can run Ruff to a verdict, for a documented reason.

    The reference counts Ruff's non-zero status as a fail; prefjudge reports an error.

    Attributes:
        cases: The checks (one per instruction id concerned).
        reference_detail: What the reference's Ruff run must have said.
        our_reason: What prefjudge's error reason must say.
        why: The documented reason.
    """

    cases: tuple[Case, ...]
    reference_detail: str
    our_reason: str
    why: str


# Asserted individually by test_allowed_errors_..., never part of the parity tests.
ALLOWED_ERRORS: dict[str, Allowed] = {
    "ruff-crash": Allowed(
        tuple(Case.of(f"allowed:{i}/ruff-crash", RUFF_CRASH, i, {}) for i in CRASH_IDS),
        "stack overflow",
        "overflowed its stack",
        "Ruff aborts with a stack overflow on 10,000 nested unary minus signs (SIGABRT): any "
        "non-zero status is a fail for the reference; prefjudge reports Ruff's crash as an "
        "error (and keeps the other responses' verdicts, see the test below)",
    ),
    "doc_3-unknown-convention": Allowed(
        (Case.of("allowed:doc_3/javadoc", fence(GOOGLE), "doc_3", {"convention": "javadoc"}),),
        "ruff exit 2",
        "params.convention",
        "Ruff has no 'javadoc' convention and refuses the --config value (exit 2); prefjudge "
        "rejects the parameter before running Ruff",
    ),
    "style_3-non-integer-length": Allowed(
        (Case.of("allowed:style_3/wide", fence(SMALL), "style_3", {"line_length": "wide"}),),
        "ruff exit 2",
        "params.line_length",
        "--line-length wide is no number: Ruff exits 2; prefjudge rejects the parameter",
    ),
}


def targeted_cases() -> list[Case]:
    cases = []
    for name, response in GENERAL.items():
        for check_id in CHECK_IDS:
            cases.append(Case.of(f"general:{name}", response, check_id, {}))
    for label, code in (("clean", CLEAN), ("dirty", DIRTY)):
        for shape, response in all_shapes(code, SEED):
            for check_id in CHECK_IDS:
                cases.append(Case.of(f"{label} @ {shape}", response, check_id, {}))
    for check_id, codes in TARGETED.items():
        for name, code in codes.items():
            for params in param_variants(check_id):
                cases.append(Case.of(f"targeted:{check_id}/{name}", fence(code), check_id, params))
        for name, code in codes.items():  # the same code, not fenced
            cases.append(Case.of(f"targeted:{check_id}/{name} (raw)", code, check_id, {}))
    for check_id, responses in RESPONSES.items():
        for name, response in responses.items():
            cases.append(Case.of(f"targeted:{check_id}/{name}", response, check_id, {}))
    for check_id in ("logic_1", "library_2", "style_5"):  # first block is not the code
        for shape in ("bash_first", "usage_after", "output_after", "json_array_after"):
            response = wrap(DIRTY, shape, SEED)
            cases.append(Case.of(f"targeted:{check_id}/dirty @ {shape}", response, check_id, {}))
    return cases


def by_id(comparisons: list[Comparison]) -> dict[str, list[Comparison]]:
    grouped: dict[str, list[Comparison]] = {check_id: [] for check_id in CHECK_IDS}
    for comparison in comparisons:
        grouped[comparison.case.check_id].append(comparison)
    return grouped


def assert_parity(comparisons: list[Comparison], check_id: str) -> None:
    assert comparisons, f"no case for {check_id}"
    differences = [c for c in comparisons if not c.agrees]
    note = "" if ACCEPTS_PROFILE else " (verify_batch takes no profile= yet: default compared)"
    assert not differences, (
        f"{check_id}: {len(differences)} of {len(comparisons)} checks differ from the SWE-IF "
        f"reference{note}:\n{render_differences(differences)}"
    )


@pytest.fixture(scope="module")
def targeted() -> dict[str, list[Comparison]]:
    return by_id(compare(targeted_cases(), ours, workers=WORKERS))


# ------------------------------------------------------------------------------ the port itself

# Python 3.12 syntax: the emulation sees the df only where this Python parses the code.
PY312_DF = ("type X = int\ndf = 1\n", [1] if sys.version_info >= (3, 12) else None)


@pytest.mark.parametrize(
    ("response", "solution"),
    [
        ("", ""),
        ("x = 1\n", "x = 1\n"),
        ("```python\nx = 1\n```", "x = 1\n"),
        ("```\nx = 1\n```", "x = 1\n"),
        ("```py\nx = 1\n```", "x = 1\n"),
        ("```bash\nls\n```\n```python\nx = 1\n```", "ls\n"),
        ("```python\n\n```\n```python\nx = 1\n```", "x = 1\n"),
        ("```python\n  \n```\ntext", ""),
        ("```python\nx = 1\n", "```python\nx = 1\n"),
        ("```python\r\nx = 1\r\n```", "python\r\nx = 1\r\n"),
        ("``` python\nx = 1\n```", " python\nx = 1\n"),
        ("   ```python\n   x = 1\n   ```", "   x = 1\n   "),
        ("```python\ns = '```'\n```", "s = '"),
        ("a ```b``` c", "b"),
    ],
)
def test_the_port_extracts_the_first_non_blank_fenced_block(response, solution):
    assert solution_of(response) == solution


@pytest.mark.parametrize(
    ("code", "lines"),
    [
        ("df = 1\n", [1]),
        ("x = 1\ndef f():\n    if x:\n        df = 2\n", [4]),
        ("class A:\n    df = 1\n", [2]),
        ("x = 1; df = 2\n", [1]),
        ("df: int = 1\n", []),
        ("a = df = 1\n", []),
        ("df, b = 1, 2\n", []),
        ("[df] = [1]\n", []),
        ("for df in x:\n    pass\n", []),
        ("with a as df:\n    pass\n", []),
        ("df += 1\n", []),
        ("(df := 1)\n", []),
        ("def f(df=1):\n    return df\n", []),
        ("df = 1  # noqa\n", []),
        ("df = 1  # NOQA:PD901\n", []),
        ("df = 1  # noqa: E501, PD901\n", []),
        ("df = 1  # noqa: E501\n", [1]),
        ("df = 1  # noqa: pd901\n", [1]),
        ("df = 1  # noqa:\n", [1]),
        ("df = 1  # noqa:PD901:E501\n", [1]),
        ("df = 1  # hello # noqa\n", []),
        ("df = 1  # ruff: noqa\n", [1]),
        ("# ruff: noqa\ndf = 1\n", []),
        ("# flake8: noqa: PD901\ndf = 1\n", []),
        ("# ruff: noqa: E501\ndf = 1\n", [2]),
        ('df = """\na\n"""  # noqa\n', []),
        ("df = (\n    1\n)  # noqa\n", [1]),
        ("df = \\\n    1  # noqa\n", []),
        ("df = 1\r\n", [1]),
        ("df = (\n", None),  # not Python: undetermined (Ruff's syntax error decides)
        ("x = (\n", []),  # not Python, but no `df`: PD901 cannot fire
        PY312_DF,
    ],
)
def test_the_port_emulates_pd901_with_ruffs_noqa_rules(code, lines):
    assert pd901_lines(code) == lines


NOQA_COMMENTS = (
    "# noqa", "#noqa:PD901", "# NOQA", "# noqa: E501", "# noqa: PD", "# noqa:", "# noqa: pd901",
    "# hello # noqa", "# noqa - why", "# noqa:PD901:E501", "# noqa: E501 PD901", "# noqa : PD901",
    "#noqaPD901", "# noqa: PD901F401", "# noqa: PD901.", "# noqa: E501,,PD901", "# noqa#",
    "# noqa: E501 and PD901", "# ruff: noqa", "",
)  # fmt: skip
NOQA_BODIES = (
    "df = 1{c}\n",
    "df = (\n    1\n){c}\n",
    'df = """\na\n"""{c}\n',
    "df = 1 \\\n  + 2{c}\n",
    'def f():\n    df = """a\n""" + \\\n        """b\n"""{c}\n',
    "# ruff: noqa: E501\ndf = 1{c}\n",
    "# flake8: noqa\ndf = 1{c}\n",
    "    # ruff: noqa\ndf = 1{c}\n",
)


def parses(code: str) -> bool:
    try:
        compile(code, "<code>", "exec", flags=0x400, dont_inherit=True)  # PyCF_ONLY_AST
    except (SyntaxError, ValueError):
        return False
    return True


@pytest.mark.skipif(
    not os.environ.get("PREFJUDGE_PD901_RUFF"),
    reason="needs a Ruff that still has PD901 (the reference pins ruff==0.11.13): "
    "PREFJUDGE_PD901_RUFF=/path/to/that/ruff",
)
def test_the_pd901_emulation_agrees_with_a_ruff_that_has_the_rule():
    old = IsolatedRuff(os.environ["PREFJUDGE_PD901_RUFF"])
    codes = [body.format(c=f"  {c}" if c else "") for body in NOQA_BODIES for c in NOQA_COMMENTS]
    codes += [*DF_CASES.values(), DIRTY, "# ruff: noqa\n" + DIRTY]
    try:
        found = {code: old.run(code, ["--select", "PD901"]) for code in codes}
    finally:
        old.close()
    assert "removed" not in found["df = 1\n"].detail, "this Ruff no longer has PD901"
    wrong = [
        (code, outcome.detail)
        for code, outcome in found.items()
        if parses(code) and (not pd901_lines(code)) != outcome.passed
    ]
    assert not wrong, "\n".join(f"{code!r}: Ruff says {detail}" for code, detail in wrong)


def test_the_ports_python_checks_follow_the_reference():
    verdicts = {
        ("doc_4", ""): True,
        ("doc_4", "x = 1\n"): True,
        ("doc_4", fence("x = 1\n")): False,
        ("doc_4", "x = 1\x00\n"): False,
        ("doc_5", fence("x = 1\n")): True,
        ("doc_5", fence("x = 1  # c\n")): False,
        ("doc_5", fence('def f():\n    """D."""\n')): False,
        ("doc_5", fence("x = '''a\n")): False,
        ("doc_6", fence("x = 1\n") + fence("[1]", "json")): True,
        ("doc_6", "Here:\n" + fence("x = 1\n") + fence("{}", "json")): False,
        ("doc_6", fence("x = 1\n") + fence("{'a': 1}", "json")): False,
        ("doc_6", fence("x = 1\n") + fence("[" * 100000 + "]" * 100000, "json")): False,
    }
    found = {key: reference_verdict(key[0], key[1]) for key in verdicts}
    assert found == verdicts


def test_the_ports_ruff_checks_follow_the_reference():
    checks = [
        ReferenceCheck("style_1", fence(code_line(85))),  # E501 at Ruff's default 88
        ReferenceCheck("style_1", fence(code_line(89))),
        ReferenceCheck("style_3", fence(code_line(85))),
        ReferenceCheck("style_3", fence(code_line(85)), {"line_length": 88}),
        ReferenceCheck("style_5", fence("x = 'a'\n")),
        ReferenceCheck("style_5", fence("x = 'a'  # noqa\n")),
        ReferenceCheck("doc_2", fence(doc_with_line(73))),
        ReferenceCheck("doc_2", fence(doc_with_line(73)), {"line_length": 88}),
        ReferenceCheck("doc_3", fence(GOOGLE), {"convention": "google"}),
        ReferenceCheck("doc_3", fence(GOOGLE), {"convention": "javadoc"}),
        ReferenceCheck("style_3", fence("x = 1\n"), {"width": 80}),  # not a parameter
        ReferenceCheck("library_2", fence("df = 1\n")),
        ReferenceCheck("library_2", fence("df: int = 1\n")),
        ReferenceCheck("nope_1", "x = 1\n"),
    ]
    outcomes = reference_outcomes(checks, workers=2)
    assert [o.passed for o in outcomes] == [
        True, False, False, True, False, True, False, True, True, False, False, False, True,
        False,
    ]  # fmt: skip
    assert "ruff exit 2" in outcomes[9].detail


def test_the_ports_ruff_refuses_inherited_configuration(tmp_path):
    configured, plain = tmp_path / "configured", tmp_path / "plain"
    (configured / "a" / "b").mkdir(parents=True)
    plain.mkdir()
    (configured / "ruff.toml").write_text("line-length = 200\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="would configure"):
        _refuse_inherited_configuration(configured / "a" / "b")
    _refuse_inherited_configuration(plain)
    (plain / "pyproject.toml").write_text("[tool.ruff]\nline-length = 200\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match=r"pyproject\.toml would configure"):
        _refuse_inherited_configuration(plain)


def test_parameter_variants_cover_defaults_and_alternatives():
    for check_id, (name, default) in PARAM_DEFAULTS.items():
        variants = param_variants(check_id)
        assert variants[0] == {} and {name: default} in variants, check_id
        assert len({v.get(name) for v in variants[1:]}) >= 3, check_id
    assert set(PARAM_VALUES) == set(PARAM_DEFAULTS)


def test_shapes_are_deterministic_and_distinct():
    first = all_shapes(DIRTY, SEED)
    assert first == all_shapes(DIRTY, SEED)
    assert [shape for shape, _ in first] == list(SHAPES)
    assert len({response for _, response in first}) == len(SHAPES)
    assert some_shapes(DIRTY, 4, SEED) == some_shapes(DIRTY, 4, SEED)
    assert next(shape for shape, _ in some_shapes(DIRTY, 4, SEED)) == "fence"


# ------------------------------------------------------------------------------ parity


@pytest.mark.slow
@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_targeted_cases_agree_with_the_reference(check_id, targeted):
    comparisons = targeted[check_id]
    assert {c.reference.passed for c in comparisons} >= {True, False}, "cases without teeth"
    assert_parity(comparisons, check_id)


@pytest.mark.parametrize("name", sorted(ALLOWED_ERRORS))
def test_allowed_errors_are_where_neither_side_can_run_ruff(name):
    allowed = ALLOWED_ERRORS[name]
    for comparison in compare(list(allowed.cases), ours, workers=WORKERS):
        shown = f"{name} ({allowed.why}):\n{comparison.render()}"
        assert (comparison.reference.passed, comparison.status) == (False, "error"), shown
        assert allowed.reference_detail in comparison.reference.detail, shown
        assert allowed.our_reason in comparison.reason, shown


@pytest.mark.slow
def test_a_response_that_crashes_ruff_leaves_the_other_verdicts_alone():
    crash_ids = (*CRASH_IDS, "doc_4", "doc_5", "doc_6")
    others = [("small", fence(SMALL)), ("dirty", fence(DIRTY)), ("clean", CLEAN)]
    cases = [Case.of("ruff-crash", RUFF_CRASH, check_id, {}) for check_id in crash_ids]
    cases += [Case.of(name, text, check_id, {}) for name, text in others for check_id in CHECK_IDS]
    comparisons = compare(cases, ours, workers=WORKERS)
    crashed = [c for c in comparisons if c.case.label == "ruff-crash"]
    assert [c.status for c in crashed][: len(CRASH_IDS)] == ["error"] * len(CRASH_IDS)
    differences = [c for c in comparisons[len(CRASH_IDS) :] if not c.agrees]
    assert not differences, render_differences(differences)


def real_code_cases(
    data: Path, *, bigcodebench: int, evalperf: int, shapes: int | None, seed: int
) -> Iterator[Case]:
    """Real code in Markdown shapes: every id at ``{}``, every parameter on the fence.

    Args:
        data: The shared data folder.
        bigcodebench: How many BigCodeBench canonical solutions (seeded sample).
        evalperf: How many EvalPerf solutions (seeded sample).
        shapes: Shapes per code (``fence`` always among them); None for all.
        seed: Seed of the samples and the shapes.
    """
    solutions = bigcodebench_solutions(data)
    picked = random.Random(seed).sample(solutions, min(bigcodebench, len(solutions)))
    codes = [(f"bcb:{name}", code) for name, code in picked]
    files = None if evalperf > 50 else 6
    codes += [
        (f"evalperf:{name}", code)
        for name, code in evalperf_solutions(data, evalperf, seed, files=files)
    ]
    for name, code in codes:
        wrapped = all_shapes(code, seed) if shapes is None else some_shapes(code, shapes, seed)
        for shape, response in wrapped:
            for check_id in CHECK_IDS:
                variants = param_variants(check_id) if shape == "fence" else [{}]
                for params in variants:
                    yield Case.of(f"{name} @ {shape}", response, check_id, params)


@pytest.fixture(scope="module")
def real_code(shared_data) -> dict[str, list[Comparison]]:
    cases = list(real_code_cases(shared_data, bigcodebench=16, evalperf=16, shapes=4, seed=SEED))
    return by_id(compare(cases, ours, workers=WORKERS))


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_real_code_agrees_with_the_reference(check_id, real_code):
    assert_parity(real_code[check_id], check_id)


@pytest.fixture(scope="module")
def real_code_full(shared_data) -> dict[str, list[Comparison]]:
    cases = list(
        real_code_cases(shared_data, bigcodebench=150, evalperf=150, shapes=None, seed=SEED + 1)
    )
    return by_id(compare(cases, ours, workers=WORKERS))


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.skipif(not FULL, reason="the large parity run is opt-in: PREFJUDGE_PARITY_FULL=1")
def test_more_real_code_agrees_with_the_reference(real_code_full):
    assert set(real_code_full) == set(CHECK_IDS)
    for check_id in CHECK_IDS:
        assert_parity(real_code_full[check_id], check_id)
