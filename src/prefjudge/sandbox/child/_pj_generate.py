"""Generator runner: calls a model-written input generator at growing scales, logs its inputs.

Standalone, stdlib only. The payload (``prefjudge.sandbox.generate_payload``) holds the
generator's source, its function's name and the scales to call it at, smallest first. For
each scale the function is called once (``function(scale)``), and what it returns is
turned, under the same CPU-time limit as the call, into one JSON text: it must be a list
(or tuple) of arguments made only of JSON's values (``None``, booleans, integers, finite
floats, strings, lists and tuples, dicts with string keys), at most ``max_chars`` long.
Each scale writes one line to the outputs file: ``{"scale": s, "input": "<json text>"}``.

The first scale that raises, runs past ``call_cpu_s``, returns something else or is too
long stops the run: its line says why (``{"scale": s, "problem": "..."}``) and the result
is ``fail`` with the same words; larger scales would only be worse. Nothing here is
trusted: prefjudge reads the lines outside with limits and checks every input again
(:func:`prefjudge.sandbox.generate_payload.read_generated`).
"""

from __future__ import annotations

import json
import math

import _pj_common as common
import _pj_evalplus as evalplus
import _pj_plain as plain

GENERATOR_FILE = "generator.py"
_dumps = json.dumps  # taken before the generator runs: it may replace json's
_isfinite = math.isfinite


class NotJson(Exception):
    """The generator's value holds something JSON does not (or is too deep)."""


def _json_value(value: object, depth: int = 0) -> object:
    """``value`` (already exact built-in types) as JSON's values; tuples become lists."""
    if depth > plain.MAX_DEPTH:
        raise NotJson(f"nested more than {plain.MAX_DEPTH} levels deep")
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        if not _isfinite(value):
            raise NotJson(f"holds the float {value!r}, which JSON cannot carry")
        return value
    if kind is list or kind is tuple:
        return [_json_value(item, depth + 1) for item in value]
    if kind is dict:
        if not all(type(key) is str for key in value):
            raise NotJson("holds a dict whose keys are not all strings")
        return {key: _json_value(item, depth + 1) for key, item in value.items()}
    raise NotJson(f"holds a {kind.__name__}, which is not JSON data")


def _made(function: object, max_chars: int):
    """A function of one scale: the generator's arguments as JSON text, or a problem."""

    def make(scale: int) -> tuple[str | None, str | None]:
        out = function(scale)
        if type(out) not in (list, tuple):
            return None, f"returned a {type(out).__name__}, not a list of arguments"
        try:
            text = _dumps(_json_value(plain.to_plain(out)), allow_nan=False)
        except (plain.NotPlainData, NotJson, RecursionError, TypeError, ValueError) as exc:
            return None, f"returned something that is not plain JSON data: {exc}"
        if len(text) > max_chars:
            return None, f"returned {len(text)} characters of JSON, more than {max_chars}"
        return text, None

    return make


def run(payload: dict) -> dict[str, str]:
    """Call the generator at every scale of the payload, one outputs line a scale.

    Returns:
        ``ran`` when every scale gave an input, else ``fail`` with the first problem.
    """
    log = common.OutputsLog()
    plain.capture_types()
    name, limit = payload["entry_point"], float(payload["call_cpu_s"])
    function, problem = evalplus._load_function(payload["code"], name, GENERATOR_FILE,
                                                "generator")
    if problem is not None:
        return problem
    make = _made(function, int(payload["max_chars"]))
    for scale in payload["scales"]:
        try:
            text, problem = evalplus._call_with_limit(make, [int(scale)], limit)
        except evalplus.InputTimeout:
            problem = f"exceeded {limit:g} s of CPU"
        except BaseException as exc:
            problem = "raised " + common.describe_exception(exc, (GENERATOR_FILE,))
        if problem is not None:
            problem = common.truncate(f"at scale {scale}: {problem}")
            log.append({"scale": scale, "problem": problem})
            return {"status": "fail", "detail": problem}
        log.append({"scale": scale, "input": text})
    return {"status": "ran", "detail": "the generator gave an input at every scale"}
