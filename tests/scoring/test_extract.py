"""Code extraction from responses, fenced blocks, and the Python-side checks' helpers."""

from __future__ import annotations

import ast
import json

import pytest

from prefjudge.scoring.verify import extract_code
from prefjudge.scoring.verify.checks import comment_lines, parse, tokenized_comment_lines
from prefjudge.scoring.verify.extract import fenced_blocks


def test_strict_no_fence_gives_the_whole_response():
    assert extract_code("x = 1\nprint(x)\n", 'strict') == "x = 1\nprint(x)\n"
    assert extract_code("", 'strict') == ""


def test_strict_the_last_python_block_wins():
    response = "```python\nfirst = 1\n```\ntext\n```python\nsecond = 2\n```\nbye\n"
    assert extract_code(response, 'strict') == "second = 2\n"


@pytest.mark.parametrize("tag", ["python", "py", "Python", "python3", ""])
def test_python_tags_and_bare_fences(tag):
    assert extract_code(f"Code:\n```{tag}\nx = 1\n```\n", 'strict') == "x = 1\n"


def test_other_languages_are_not_code_to_check():
    response = '```python\nx = 1\n```\n```json\n{"a": 1}\n```\n```bash\nls\n```\n'
    assert extract_code(response, 'strict') == "x = 1\n"
    assert extract_code('```json\n{"a": 1}\n```\n', 'strict') == '```json\n{"a": 1}\n```\n'


def test_info_strings_and_longer_fences():
    assert extract_code("```python title=x.py\nx = 1\n```", 'strict') == "x = 1\n"
    response = "````python\nprint('```')\n```\nstill code\n````\n"
    assert extract_code(response, 'strict') == "print('```')\n```\nstill code\n"


def test_an_unclosed_fence_runs_to_the_end():
    block = fenced_blocks("Sure:\n```python\ndef f():\n    return 1")
    assert [(b.tag, b.text, b.closed) for b in block] == [
        ("python", "def f():\n    return 1", False)
    ]


def test_indented_fences_are_dedented():
    response = "1. Step one:\n   ```python\n   def f():\n       return 1\n   ```\n"
    assert extract_code(response, 'strict') == "def f():\n    return 1\n"


def test_block_positions_and_crlf():
    response = "a\r\n```json\r\n[1]\r\n```\r\n"
    (block,) = fenced_blocks(response)
    assert (block.tag, block.start_line, json.loads(block.text)) == ("json", 2, [1])


def test_empty_block():
    (block,) = fenced_blocks("```python\n```\n")
    assert block.text == "" and block.closed


TRICKY = '''\
#!/usr/bin/env python
x = "# not a comment"  # a comment
y = 'it''s # still a string'
z = """
# inside a docstring-like string
""" # after
w = f"{x}#{y}"
v = r"\\" # all one raw string, up to here: \\\\"
u = "escaped \\" # quote"  # real
t = \'\'\'a \'\' # b\'\'\'
'''


def test_comment_lines_agree_with_tokenize_on_tricky_code():
    ast.parse(TRICKY)
    assert comment_lines(TRICKY) == tokenized_comment_lines(TRICKY)
    assert comment_lines(TRICKY) == [1, 2, 6, 9]


def test_comment_lines_agree_with_tokenize_on_real_code(shared_data):
    import gzip

    path = shared_data / "benchmarks/bigcodebench/BigCodeBench_v0.1.0_hf.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        codes = [
            (task := json.loads(line))["complete_prompt"] + task["canonical_solution"]
            for line in handle
        ]
    checked = 0
    for code in codes[::3]:
        try:
            parse(code)
        except SyntaxError:
            continue
        assert comment_lines(code) == tokenized_comment_lines(code)
        checked += 1
    assert checked > 300


# ---------------------------------------------------------------- the reference profile


def test_reference_takes_the_first_block_of_any_language():
    response = "```bash\npip install x\n```\nThen:\n```python\nx = 1\n```\n"
    assert extract_code(response) == "pip install x\n"
    assert extract_code(response, "reference") == "pip install x\n"


def test_reference_skips_blank_blocks_and_keeps_the_block_unstripped():
    assert extract_code("```python\n\n```\ntext\n```\n  x = 1\n\n```") == "  x = 1\n\n"
    assert extract_code("```python\n   \n```\n") == ""


def test_reference_without_a_complete_fence_is_the_whole_response():
    truncated = "Sure:\n```python\ndef f():\n    return 1"
    assert extract_code(truncated) == truncated
    assert extract_code("x = 1\n") == "x = 1\n"
    assert extract_code("") == ""


def test_reference_reads_inline_fences_and_tags_without_newline():
    assert extract_code("Use ```x = 1``` here") == "x = 1"
    assert extract_code("```python x = 1```") == "python x = 1"
