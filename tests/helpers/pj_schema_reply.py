"""Deterministic, schema-valid replies for the fake OpenAI server.

``schema_reply(body)`` answers any structured request with the smallest JSON value its
JSON schema accepts, choosing among enum values (verdicts, booleans) by a hash of the
conversation, so the same request always gets the same reply and different requests get
different verdicts. Free-text requests get a short Python answer. A few persona-rewrite
replies are shaped so that the deterministic checks can pass (the request names the
function, in enough words). This lets stage tests run whole commands against a real HTTP
server in a subprocess, and compare a killed-and-resumed run with an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any


def _digest(body: dict[str, Any]) -> int:
    blob = json.dumps(body.get("messages"), sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


def _user_text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


class _Maker:
    def __init__(self, root: dict[str, Any], seed: int):
        self.defs = root.get("$defs", {})
        self.seed = seed
        self.counter = 0

    def pick(self, options: list[Any]) -> Any:
        self.counter += 1
        return options[(self.seed >> (self.counter % 48)) % len(options)]

    def value(self, schema: dict[str, Any]) -> Any:
        if "$ref" in schema:
            return self.value(self.defs[schema["$ref"].rsplit("/", 1)[1]])
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.pick(schema["enum"])
        if "anyOf" in schema:
            options = [s for s in schema["anyOf"] if s.get("type") != "null"]
            return self.value(options[0] if options else schema["anyOf"][0])
        kind = schema.get("type")
        if kind == "object":
            props = schema.get("properties", {})
            return {name: self.value(sub) for name, sub in props.items()}
        if kind == "array":
            count = max(schema.get("minItems", 0), 1 if schema.get("maxItems", 1) else 0)
            count = min(count, schema.get("maxItems", count))
            return [self.value(schema.get("items", {"type": "string"})) for _ in range(count)]
        if kind == "string":
            low, high = schema.get("minLength", 0), schema.get("maxLength", 60)
            text = f"reason number {self.counter} for this reply"
            self.counter += 1
            text = (text * (1 + low // len(text)))[: max(low, min(len(text), high))]
            return text
        if kind == "integer":
            low = schema.get("minimum", 1)
            high = schema.get("maximum", low + 4)
            return self.pick(list(range(low, high + 1)))
        if kind == "number":
            return float(schema.get("minimum", 0.5))
        if kind == "boolean":
            return self.pick([True, True, False])
        return None


def schema_reply(body: dict[str, Any]) -> str:
    """A deterministic reply valid for the request's JSON schema (or free text)."""
    seed = _digest(body)
    fmt = body.get("response_format") or {}
    if fmt.get("type") != "json_schema":
        return f"```python\ndef answer():\n    return {seed % 97}\n```"
    name = fmt["json_schema"]["name"]
    text = _user_text(body)
    if name == "ComposeReply":
        found = re.search(r"function `(\w+)`", text)
        entry = found.group(1) if found else "solve"
        return json.dumps({"prompt": f"hey, I am learning Python, can you write {entry} for "
                                     "the task below, with the same inputs and outputs?"})
    if name == "PreserveReply":
        same = seed % 4 != 0
        return json.dumps({"reason": "checked", "same_goal": same, "same_solutions": same})
    schema = fmt["json_schema"]["schema"]
    return json.dumps(_Maker(schema, seed).value(schema))
