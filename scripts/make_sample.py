"""Build the bundled sample in datasets/sample/ (tasks with tests, three "models").

The sample is hand-written so the Quickstart shows a meaningful table with no network
and no GPU: ``sample-strong`` writes correct code that follows its instructions,
``sample-medium`` writes mostly correct code that ignores the instructions, ``sample-weak``
writes buggy code wrapped in prose and follows instructions only by accident. Rerun after editing: ``python scripts/make_sample.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "datasets" / "sample"

TASKS: list[dict] = []
GENERATIONS: list[dict] = []


def task(task_id: str, prompt: str, test_format: str, *, entry_point: str | None = None,
         tests: str = "", stdio: list[tuple[str, str]] | None = None,
         canonical: str | None = None) -> None:
    TASKS.append({
        "task_id": task_id, "prompt": prompt, "entry_point": entry_point,
        "test_format": test_format, "tests": tests, "canonical_solution": canonical,
        "stdio_cases": [{"input": i, "output": o} for i, o in (stdio or [])],
        "source": "prefjudge-sample",
    })


def gens(task_id: str, instructions: list[dict], strong: str, medium: str, weak: str) -> None:
    for model, response in (("sample-strong", strong), ("sample-medium", medium),
                            ("sample-weak", weak)):
        GENERATIONS.append({"id": f"{model}/{task_id}", "task_id": task_id, "model": model,
                            "response": response, "instructions": instructions})


def fence(code: str, before: str = "", after: str = "") -> str:
    text = f"```python\n{code.strip()}\n```"
    return "\n\n".join(part for part in (before, text, after) if part)


# 1 ---------------------------------------------------------------------------------------
task("sample/running_mean",
     "Write a function running_mean(values) that returns the list of running means of a "
     "list of numbers (the i-th element is the mean of the first i+1 values).",
     "humaneval", entry_point="running_mean",
     tests="def check(candidate):\n"
           "    assert candidate([]) == []\n"
           "    assert candidate([2]) == [2.0]\n"
           "    assert candidate([1, 2, 3, 4]) == [1.0, 1.5, 2.0, 2.5]\n"
           "    assert candidate([5, -5]) == [5.0, 0.0]\n")
gens("sample/running_mean",
     [{"id": "doc_1", "params": {}}, {"id": "style_3", "params": {"line_length": 79}}],
     fence('''
def running_mean(values: list[float]) -> list[float]:
    means: list[float] = []
    total = 0.0
    for count, value in enumerate(values, start=1):
        total += value
        means.append(total / count)
    return means
'''),
     fence('''
def running_mean(values):
    total = 0.0
    out = []
    for i, v in enumerate(values):
        total += v; out.append(total / (i + 1))  # running total divided by the number of values seen so far
    return out
'''),
     fence('''
def running_mean(values):
    return [sum(values) / len(values) for v in values]
''', "Sure! Here is a simple solution:", "This computes the running mean."))

# 2 ---------------------------------------------------------------------------------------
task("sample/word_count",
     "Write task_func(text) returning a dict mapping each lowercase word to its count. "
     "Words are runs of letters; ignore punctuation and case.",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_basic(self):\n"
           "        self.assertEqual(task_func('a b a'), {'a': 2, 'b': 1})\n"
           "    def test_case_and_punct(self):\n"
           "        self.assertEqual(task_func('Hi, hi! HI?'), {'hi': 3})\n"
           "    def test_empty(self):\n"
           "        self.assertEqual(task_func(''), {})\n")
gens("sample/word_count",
     [{"id": "style_2", "params": {}}, {"id": "doc_3", "params": {"convention": "google"}}],
     fence('''
"""Word counting."""

import re
from collections import Counter


def task_func(text: str) -> dict[str, int]:
    """Count lowercase words in a text.

    Args:
        text: The text to count words in.

    Returns:
        A mapping from each lowercase word to its count.
    """
    return dict(Counter(re.findall(r"[a-z]+", text.lower())))
'''),
     fence('''
from collections import Counter
import re

def task_func(text):
    return dict(Counter(re.findall(r"[a-z]+", text.lower())))
'''),
     fence('''
def task_func(text):
    counts = {}
    for w in text.split():
        counts[w] = counts.get(w, 0) + 1
    return counts
''', "Here you go."))

# 3 ---------------------------------------------------------------------------------------
task("sample/is_palindrome",
     "Write is_palindrome(s) that returns True when s reads the same forwards and "
     "backwards, ignoring case and non-alphanumeric characters.",
     "humaneval", entry_point="is_palindrome",
     tests="def check(candidate):\n"
           "    assert candidate('') is True\n"
           "    assert candidate('A man, a plan, a canal: Panama') is True\n"
           "    assert candidate('race a car') is False\n"
           "    assert candidate('No lemon, no melon') is True\n")
gens("sample/is_palindrome",
     [{"id": "doc_4", "params": {}}, {"id": "logic_3", "params": {"max_branches": 2}}],
     '''def is_palindrome(s: str) -> bool:
    cleaned = [ch.lower() for ch in s if ch.isalnum()]
    return cleaned == cleaned[::-1]
''',
     fence('''
def is_palindrome(s):
    cleaned = [ch.lower() for ch in s if ch.isalnum()]
    if not cleaned:
        return True
    if cleaned == cleaned[::-1]:
        return True
    else:
        return False
''', "Here is the function:"),
     fence('''
def is_palindrome(s):
    return s == s[::-1]
''', "Easy one!"))

# 4 ---------------------------------------------------------------------------------------
task("sample/flatten",
     "Write task_func(nested) that flattens arbitrarily nested lists into one flat list, "
     "keeping order.",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_nested(self):\n"
           "        self.assertEqual(task_func([1, [2, [3, [4]]], 5]), [1, 2, 3, 4, 5])\n"
           "    def test_flat(self):\n"
           "        self.assertEqual(task_func([1, 2]), [1, 2])\n"
           "    def test_empty(self):\n"
           "        self.assertEqual(task_func([[], [[]]]), [])\n")
gens("sample/flatten",
     [{"id": "logic_2", "params": {"max_nested_blocks": 2}}, {"id": "style_5", "params": {}}],
     fence('''
def task_func(nested):
    flat = []
    for item in nested:
        if isinstance(item, list):
            flat.extend(task_func(item))
        else:
            flat.append(item)
    return flat
'''),
     fence('''
def task_func(nested):
    out = []
    stack = [iter(nested)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                if item:
                    stack.append(iter(item))
                    break
            else:
                out.append(item)
        else:
            stack.pop()
    return out
'''),
     fence('''
def task_func(nested):
    out = []
    for item in nested:
        if type(item) == list:
            for sub in item:
                out.append(sub)
        else:
            out.append(item)
    return out
''', "I flatten the list one level, which covers most 'nested' cases."))

# 5 ---------------------------------------------------------------------------------------
task("sample/chunk",
     "Write task_func(items, size) that splits a list into consecutive chunks of the given "
     "size (the last may be shorter). Raise ValueError when size is smaller than 1.",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_even(self):\n"
           "        self.assertEqual(task_func([1, 2, 3, 4], 2), [[1, 2], [3, 4]])\n"
           "    def test_uneven(self):\n"
           "        self.assertEqual(task_func([1, 2, 3], 2), [[1, 2], [3]])\n"
           "    def test_bad_size(self):\n"
           "        with self.assertRaises(ValueError):\n"
           "            task_func([1], 0)\n")
gens("sample/chunk",
     [{"id": "error_2", "params": {}}, {"id": "style_8", "params": {}}],
     fence('''
def task_func(items, size):
    if size < 1:
        message = f"size must be at least 1, got {size}"
        raise ValueError(message)
    return [items[start:start + size] for start in range(0, len(items), size)]
'''),
     fence('''
def task_func(items, size):
    if size < 1:
        raise ValueError("size must be at least 1")
    return [items[i:i + size] for i in range(0, len(items), size)]
'''),
     fence('''
def task_func(items, size):
    if size == 0:
        raise ValueError("bad size")
    return [items[i:i + size] for i in range(0, len(items), size)]
''', "Chunks the list."))

# 6 ---------------------------------------------------------------------------------------
task("sample/fizzbuzz",
     "Write fizzbuzz(n) returning the list of strings for 1..n: 'Fizz' for multiples of 3, "
     "'Buzz' for multiples of 5, 'FizzBuzz' for both, else the number.",
     "humaneval", entry_point="fizzbuzz",
     tests="def check(candidate):\n"
           "    assert candidate(0) == []\n"
           "    assert candidate(5) == ['1', '2', 'Fizz', '4', 'Buzz']\n"
           "    assert candidate(15)[-1] == 'FizzBuzz'\n"
           "    assert len(candidate(30)) == 30\n")
gens("sample/fizzbuzz",
     [{"id": "logic_7", "params": {"max_complexity": 4}}, {"id": "doc_5", "params": {}}],
     fence('''
def fizzbuzz(n):
    words = {3: "Fizz", 5: "Buzz"}
    return [
        "".join(word for div, word in words.items() if i % div == 0) or str(i)
        for i in range(1, n + 1)
    ]
'''),
     fence('''
def fizzbuzz(n):
    """Classic FizzBuzz."""
    out = []
    for i in range(1, n + 1):
        if i % 15 == 0:
            out.append("FizzBuzz")
        elif i % 3 == 0:
            out.append("Fizz")
        elif i % 5 == 0:
            out.append("Buzz")
        else:
            out.append(str(i))
    return out
'''),
     fence('''
def fizzbuzz(n):
    # build the list
    out = []
    for i in range(1, n + 1):
        if i % 3 == 0:
            out.append("Fizz")
        elif i % 5 == 0:
            out.append("Buzz")
        else:
            out.append(str(i))
    return out
''', "Here's FizzBuzz:"))

# 7 ---------------------------------------------------------------------------------------
task("sample/top_k_frequent",
     "Write task_func(nums, k) returning the k most frequent numbers, most frequent first; "
     "break ties by the smaller number first.",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_basic(self):\n"
           "        self.assertEqual(task_func([1, 1, 1, 2, 2, 3], 2), [1, 2])\n"
           "    def test_ties(self):\n"
           "        self.assertEqual(task_func([4, 4, 3, 3, 5], 2), [3, 4])\n"
           "    def test_k_large(self):\n"
           "        self.assertEqual(task_func([7], 3), [7])\n")
gens("sample/top_k_frequent",
     [{"id": "doc_1", "params": {}}, {"id": "logic_5", "params": {"max_locals": 3}}],
     fence('''
from collections import Counter


def task_func(nums: list[int], k: int) -> list[int]:
    counts = Counter(nums)
    ranked = sorted(counts, key=lambda num: (-counts[num], num))
    return ranked[:k]
'''),
     fence('''
from collections import Counter

def task_func(nums, k):
    counts = Counter(nums)
    pairs = list(counts.items())
    pairs.sort(key=lambda p: (-p[1], p[0]))
    result = [n for n, _ in pairs]
    top = result[:k]
    return top
'''),
     fence('''
from collections import Counter

def task_func(nums, k):
    return [n for n, _ in Counter(nums).most_common(k)]
''', "most_common does it for us."))

# 8 ---------------------------------------------------------------------------------------
task("sample/read_config",
     "Write task_func(path) that reads a text file of 'key=value' lines into a dict of "
     "stripped strings, skipping blank lines and lines starting with '#'.",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_read(self):\n"
           "        with open('conf.txt', 'w') as handle:\n"
           "            handle.write('# comment\\nname = demo\\n\\nsize=3\\n')\n"
           "        self.assertEqual(task_func('conf.txt'), {'name': 'demo', 'size': '3'})\n"
           "    def test_missing(self):\n"
           "        with self.assertRaises(OSError):\n"
           "            task_func('does-not-exist.txt')\n")
gens("sample/read_config",
     [{"id": "library_1", "params": {}}, {"id": "style_7", "params": {}},
      {"id": "logic_8", "params": {}}],
     fence('''
from pathlib import Path


def task_func(path):
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    pairs = [line.split("=", 1) for line in lines if line.strip() and not line.startswith("#")]
    return {key.strip(): value.strip() for key, value in pairs}
'''),
     fence('''
def task_func(path):
    config = {}
    with open(path, "r") as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#"):
                key, value = line.split("=", 1)
                config[key.strip()] = value.strip()
    return config
'''),
     fence('''
import os

def task_func(path):
    config = {}
    if not os.path.exists(path):
        return config
    for line in open(path, "r"):
        key, value = line.split("=")
        config[key] = value
    return config
''', "Reads the config."))

# 9 ---------------------------------------------------------------------------------------
task("sample/min_max_stdio",
     "Read an integer n, then n integers on the next line, from standard input. Print the "
     "minimum and the maximum separated by a space.",
     "stdio",
     stdio=[("3\n4 -2 9\n", "-2 9"), ("1\n7\n", "7 7"), ("5\n1 1 1 1 1\n", "1 1"),
            ("3\n10 9 -1\n", "-1 10")])
gens("sample/min_max_stdio",
     [{"id": "style_1", "params": {}}, {"id": "style_6", "params": {}}],
     fence('''
import sys


def main():
    data = sys.stdin.read().split()
    count = int(data[0])
    numbers = [int(token) for token in data[1:1 + count]]
    print(min(numbers), max(numbers))


main()
'''),
     fence('''
import sys
def main():
    data=sys.stdin.read().split()
    N=int(data[0])
    nums=[int(t) for t in data[1:1+N]]
    print(min(nums),max(nums))
main()
'''),
     fence('''
n = int(input())
nums = input().split()
print(min(nums), max(nums))
''', "Reads input and prints min and max."))

# 10 --------------------------------------------------------------------------------------
task("sample/celsius",
     "Write celsius_to_fahrenheit(c) converting a temperature in Celsius to Fahrenheit.",
     "humaneval", entry_point="celsius_to_fahrenheit",
     tests="def check(candidate):\n"
           "    assert abs(candidate(0) - 32.0) < 1e-9\n"
           "    assert abs(candidate(100) - 212.0) < 1e-9\n"
           "    assert abs(candidate(-40) - (-40.0)) < 1e-9\n"
           "    assert abs(candidate(36.6) - 97.88) < 1e-9\n")
gens("sample/celsius",
     [{"id": "doc_6", "params": {}}, {"id": "doc_2", "params": {"max_doc_length": 72}}],
     fence('''
def celsius_to_fahrenheit(c: float) -> float:
    """Convert degrees Celsius to degrees Fahrenheit."""
    return c * 9 / 5 + 32
''') + '\n\n```json\n{"function": "celsius_to_fahrenheit", "complexity": "O(1)"}\n```',
     fence('''
def celsius_to_fahrenheit(c):
    """Convert a temperature from degrees Celsius to degrees Fahrenheit using F = C * 9 / 5 + 32."""
    return c * 9 / 5 + 32
'''),
     fence('''
def celsius_to_fahrenheit(c):
    return c * 9 / 5
''', "Multiply by 9/5.", '```json\n{"function": celsius_to_fahrenheit}\n```'))

# 11 --------------------------------------------------------------------------------------
task("sample/merge_intervals",
     "Write task_func(intervals) merging overlapping [start, end] intervals; return them "
     "sorted by start. Touching intervals ([1, 2] and [2, 3]) merge.",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_overlap(self):\n"
           "        self.assertEqual(task_func([[1, 3], [2, 6], [8, 10]]), [[1, 6], [8, 10]])\n"
           "    def test_touching(self):\n"
           "        self.assertEqual(task_func([[2, 3], [1, 2]]), [[1, 3]])\n"
           "    def test_empty(self):\n"
           "        self.assertEqual(task_func([]), [])\n")
gens("sample/merge_intervals",
     [{"id": "logic_4", "params": {"max_statements": 8}},
      {"id": "logic_6", "params": {}}, {"id": "style_4", "params": {}}],
     fence('''
def task_func(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
'''),
     fence('''
def task_func(intervals):
    if not intervals:
        return []
    intervals = sorted(intervals)
    merged = [list(intervals[0])]
    for start, end in intervals[1:]:
        last = merged[-1]
        if start < last[1]:
            last[1] = max(last[1], end)
        else:
            merged.append([start, end])
    result = merged
    return result
'''),
     fence('''
def task_func(intervals):
    merged = []
    for start, end in intervals:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
''', "Merging in one pass."))

# 12 --------------------------------------------------------------------------------------
task("sample/safe_divide",
     "Write task_func(a, b) returning a / b; when b is zero raise ValueError (chained from "
     "the ZeroDivisionError).",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_divide(self):\n"
           "        self.assertEqual(task_func(6, 3), 2)\n"
           "    def test_zero(self):\n"
           "        with self.assertRaises(ValueError) as ctx:\n"
           "            task_func(1, 0)\n"
           "        self.assertIsInstance(ctx.exception.__cause__, ZeroDivisionError)\n")
gens("sample/safe_divide",
     [{"id": "error_1", "params": {}}, {"id": "error_4", "params": {}}],
     fence('''
class DivisionByZeroError(ValueError):
    """Raised when dividing by zero."""


def task_func(a, b):
    try:
        return a / b
    except ZeroDivisionError as exc:
        raise DivisionByZeroError from exc
'''),
     fence('''
def task_func(a, b):
    try:
        return a / b
    except ZeroDivisionError as exc:
        raise ValueError(f"cannot divide {a} by zero") from exc
'''),
     fence('''
def task_func(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        raise ValueError("division by zero")
''', "Catches division by zero."))

# 13 --------------------------------------------------------------------------------------
task("sample/vowels_stdio",
     "Read lines from standard input until end of file and print, for each line, the number "
     "of vowels (a, e, i, o, u, either case) in it.",
     "stdio",
     stdio=[("hello\nsky\n", "2\n0"), ("AEIOU xyz\n", "5"), ("", "")])
gens("sample/vowels_stdio",
     [{"id": "logic_1", "params": {}}, {"id": "logic_9", "params": {"max_bool_expr": 2}}],
     fence('''
import sys

for line in sys.stdin:
    print(sum(ch in "aeiouAEIOU" for ch in line))
'''),
     fence('''
import sys
import os

for line in sys.stdin:
    print(sum(ch in "aeiouAEIOU" for ch in line))
'''),
     fence('''
import sys, os

for line in sys.stdin:
    n = 0
    for ch in line:
        if ch == "a" or ch == "e" or ch == "i" or ch == "o" or ch == "u":
            n += 1
    print(n)
''', "Counts vowels."))

# 14 --------------------------------------------------------------------------------------
task("sample/mean_by_group",
     "Write task_func(df, key, value) returning a pandas Series with the mean of column "
     "`value` for each distinct `key`, sorted by key.",
     "bigcodebench", entry_point="task_func",
     tests="import unittest\nimport pandas as pd\n\n"
           "class TestCases(unittest.TestCase):\n"
           "    def test_means(self):\n"
           "        frame = pd.DataFrame({'g': ['a', 'b', 'a'], 'v': [1.0, 2.0, 3.0]})\n"
           "        out = task_func(frame, 'g', 'v')\n"
           "        self.assertEqual(out.to_dict(), {'a': 2.0, 'b': 2.0})\n"
           "    def test_input_untouched(self):\n"
           "        frame = pd.DataFrame({'g': ['x'], 'v': [5.0]})\n"
           "        task_func(frame, 'g', 'v')\n"
           "        self.assertEqual(list(frame.columns), ['g', 'v'])\n")
gens("sample/mean_by_group",
     [{"id": "library_2", "params": {}}, {"id": "style_9", "params": {}}],
     fence('''
import pandas as pd


def task_func(frame: pd.DataFrame, key: str, value: str) -> pd.Series:
    return frame.groupby(key)[value].mean().sort_index()
'''),
     fence('''
import pandas as pd

def task_func(df, key, value):
    return df.groupby(key)[value].mean().sort_index()
'''),
     fence('''
import pandas as pd

def task_func(df, key, value):
    df.reset_index(inplace=True)
    means = df.groupby(key)[value].mean()
    keys, values = means.index, means.values
    return means
''', "Group and take the mean."))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, rows in (("tasks.jsonl", TASKS), ("generations.jsonl", GENERATIONS)):
        with (OUT / name).open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    print(f"wrote {len(TASKS)} tasks and {len(GENERATIONS)} generations to {OUT}")


if __name__ == "__main__":
    main()
