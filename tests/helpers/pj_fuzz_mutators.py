"""Mutators of the readers' fuzz test: hostile variants of a valid input (see pj_fuzz)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pj_fuzz_seeds import DEAD_URL
from pj_fuzz_targets import Target

# ---------------------------------------------------------------------------------------------
# mutators


@dataclass(frozen=True)
class Mutated:
    """A mutated input: its bytes, and whether it is invalid by construction."""

    data: bytes
    invalid: bool
    note: str = ""


Mutator = Callable[[bytes, Target, random.Random, int], Mutated | None]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _records(data: bytes) -> list[Any] | None:
    try:
        return [json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()]
    except ValueError:
        return None


def _dump_records(rows: list[Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")


def _str_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every string (and key holding a scalar) inside a JSON value."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += [(*path, k)] if not isinstance(v, dict | list) else []
            found += _str_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += [(*path, i)] if not isinstance(v, dict | list) else []
            found += _str_paths(v, (*path, i))
    return found


def _set(root: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        root = root[p]
    root[path[-1]] = value


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        root = root[p]
    return root


def _json_edit(
    data: bytes,
    t: Target,
    rng: random.Random,
    want: Callable[[Any], bool],
    new: Callable[[Any], Any],
) -> bytes | None:
    """Replace one scalar (chosen among those ``want`` accepts) by ``new(old)``."""
    if t.kind == "jsonl":
        rows = _records(data)
        if not rows:
            return None
        candidates = [(i, p) for i, r in enumerate(rows) for p in _str_paths(r) if want(_get(r, p))]
        if not candidates:
            return None
        i, p = rng.choice(candidates)
        _set(rows[i], p, new(_get(rows[i], p)))
        return _dump_records(rows)
    if t.kind == "json":
        doc = json.loads(data)
        candidates = [p for p in _str_paths(doc) if want(_get(doc, p))]
        if not candidates:
            return None
        p = rng.choice(candidates)
        _set(doc, p, new(_get(doc, p)))
        return json.dumps(doc, indent=1).encode("utf-8")
    if t.kind == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
        cells = [
            (i, j) for i in range(1, len(rows)) for j in range(len(rows[i])) if want(rows[i][j])
        ]
        if not cells:
            return None
        i, j = rng.choice(cells)
        rows[i][j] = str(new(rows[i][j]))
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        return out.getvalue().encode("utf-8")
    if t.kind == "toml":
        text = data.decode("utf-8").splitlines(keepends=True)
        spots = [
            i
            for i, x in enumerate(text)
            if re.match(r"\s*\w+\s*=", x) and want(x.split("=", 1)[1].split("#")[0].strip())
        ]
        if not spots:
            return None
        i = rng.choice(spots)
        key, old = text[i].split("=", 1)
        text[i] = f"{key}= {new(old.split('#')[0].strip())}\n"
        return "".join(text).encode("utf-8")
    return None


def _is_text_value(v: Any) -> bool:
    return isinstance(v, str)


def truncate_mid(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """Cut the file inside a line (the last record is broken)."""
    if t.kind == "sqlite":
        if len(data) < 2:
            return None
        return Mutated(data[: rng.randrange(1, len(data))], False, "sqlite truncated")
    lines = _lines(data)
    spots = [i for i, x in enumerate(lines) if len(x.rstrip(b"\r\n")) > 2]
    if not spots:
        return None
    i = rng.choice(spots)
    body = lines[i].rstrip(b"\r\n")
    cut = rng.randrange(1, len(body) - 1)
    piece = body[:cut]
    invalid = False
    if t.resumable:
        pass
    elif t.kind == "jsonl":
        try:
            json.loads(piece)
        except ValueError:
            invalid = True
    elif t.kind == "json":
        invalid = True
    return Mutated(b"".join(lines[:i]) + piece, invalid, f"cut line {i + 1} at byte {cut}")


def truncate_line(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """Keep the first lines only (may stay valid: never a silent accept)."""
    lines = _lines(data)
    if t.kind == "sqlite" or len(lines) < 2:
        return None
    n = rng.randrange(1, len(lines))
    return Mutated(b"".join(lines[:n]), False, f"first {n} lines")


def bad_utf8(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """Bytes that are not UTF-8 inside a line."""
    if t.kind == "sqlite" or not data:
        return None
    lines = _lines(data)
    i = rng.randrange(len(lines))
    line = lines[i]
    spot = rng.randrange(0, max(1, len(line.rstrip(b"\r\n"))))
    junk = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80\x80", b"\xf8\x88\x80"])
    lines[i] = line[:spot] + junk + line[spot:]
    return Mutated(b"".join(lines), t.strict_utf8, f"bytes {junk!r} in line {i + 1}")


def utf16(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """The same text in UTF-16 with a byte-order mark (a reader may decode it or refuse)."""
    if t.kind == "sqlite":
        return None
    return Mutated(data.decode("utf-8").encode("utf-16"), False, "utf-16")


def cp1252(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A name with accents and curly quotes, the file saved as cp1252 (not UTF-8)."""
    text = "Caf\u00e9 \u201cna\u00efve\u201d \u2013 r\u00e9sum\u00e9"

    def new(old: Any) -> Any:
        return f"{old}{text}" if isinstance(old, str) else old

    out = _json_edit(data, t, rng, _is_text_value, new)
    if out is None:
        return None
    escaped = json.dumps(text)[1:-1]  # JSON writers escape it: put the characters back
    try:
        raw = out.decode("utf-8").replace(escaped, text).encode("cp1252")
    except UnicodeEncodeError:
        return None
    return Mutated(raw, t.strict_utf8, "cp1252")


def lone_surrogate(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A lone surrogate in a name (``\\ud800`` as a JSON escape; raw in TOML or CSV)."""
    if t.kind in ("jsonl", "json"):
        out = _json_edit(data, t, rng, _is_text_value, lambda old: old + "\ud800x")
        return None if out is None else Mutated(out, False, "\\ud800 in a string")
    if t.kind == "toml":
        out = _json_edit(
            data, t, rng, lambda v: v.startswith('"'), lambda old: old[:-1] + '\\ud800"'
        )
        return None if out is None else Mutated(out, True, "\\ud800 escape in TOML")
    return None


def control_chars(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """NUL, ESC sequences, CR, LINE SEPARATOR and rich markup inside a name."""
    junk = rng.choice(
        [
            "\x00",
            "\x1b[31m\x1b]0;x\x07",
            "a\rb",
            "\u2028\u2029",
            "[bold]x[/",
            "<script>x</script>",
            "\x7f\x85",
        ]
    )
    if t.kind in ("jsonl", "json", "csv"):
        out = _json_edit(data, t, rng, _is_text_value, lambda old: old + junk)
        return None if out is None else Mutated(out, False, f"{junk!r} in a string")
    if t.kind == "toml":
        out = _json_edit(
            data,
            t,
            rng,
            lambda v: v.startswith('"'),
            lambda old: old[:-1] + json.dumps(junk)[1:-1].replace("\\u00", "\\u00") + '"',
        )
        return None if out is None else Mutated(out, False, f"{junk!r} in TOML")
    return None


def deep_nesting(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A value nested 100,000 deep (JSON arrays, TOML inline tables or arrays)."""
    depth = 100_000
    if t.kind == "jsonl":
        line = b"[" * depth + b"]" * depth + b"\n"
        lines = _lines(data)
        lines.insert(rng.randrange(len(lines) + 1), line)
        return Mutated(b"".join(lines), True, "a line 100k arrays deep")
    if t.kind == "json":
        doc = json.loads(data)
        if not isinstance(doc, dict):
            return None
        inner = json.dumps(doc)
        key = rng.choice(["__deep__", *list(doc)])
        if key == "__deep__":
            text = inner[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
            return Mutated(text.encode(), False, "deep extra field")
        text = "[" * depth + inner + "]" * depth
        return Mutated(text.encode(), True, "document wrapped 100k arrays deep")
    if t.kind == "toml":
        depth = rng.choice([1000, 100_000])
        value = rng.choice([("{a = " * depth + "1" + "}" * depth), ("[" * depth + "]" * depth)])
        text = data.decode("utf-8")
        lines = text.splitlines(keepends=True)
        spots = [i for i, x in enumerate(lines) if re.match(r"\s*\w+\s*=", x)]
        i = rng.choice(spots)
        key = lines[i].split("=", 1)[0]
        lines[i] = f"{key}= {value}\n"
        return Mutated("".join(lines).encode(), False, f"TOML value {depth} deep")
    return None


def nan_numbers(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """NaN, Infinity, 1e999 or a 400-digit integer where a number was."""
    if t.kind in ("jsonl", "json"):
        value = rng.choice([float("nan"), float("inf"), float("-inf"), 10**400, -(10**400)])

        def is_number(v: Any) -> bool:
            return isinstance(v, int | float) and not isinstance(v, bool)

        out = _json_edit(data, t, rng, is_number, lambda old: value)
        return None if out is None else Mutated(out, False, f"{str(value)[:12]} for a number")
    if t.kind == "csv":
        value = rng.choice(["nan", "inf", "-inf", "1e999", "9" * 400, ""])

        def numeric(v: Any) -> bool:
            try:
                float(v)
            except ValueError:
                return False
            return True

        out = _json_edit(data, t, rng, numeric, lambda old: value)
        return None if out is None else Mutated(out, False, f"{value[:12]!r} for a number")
    if t.kind == "toml":
        value = rng.choice(["nan", "inf", "-inf", "9" * 400, "1e999"])
        out = _json_edit(
            data, t, rng, lambda v: bool(re.fullmatch(r"-?[\d.]+", v)), lambda old: value
        )
        invalid = t.finite_numbers and value != "9" * 400  # a big integer may be valid
        return None if out is None else Mutated(out, invalid, f"{value[:12]} in TOML")
    return None


def huge_name(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A name of ``big`` bytes (4 MiB in the long run) in a string field."""
    filler = rng.choice(["x", "\u00e9", "ab "])
    text = (filler * (big // len(filler.encode()) + 1))[: big // len(filler.encode())]
    if t.kind in ("jsonl", "json", "csv"):
        names = [
            k
            for k in ("model", "task_id", "model_a", "model_b", "pair_id", "name")
            if k in t.required
        ] or None
        if t.kind == "jsonl" and names:
            rows = _records(data)
            if rows:
                i = rng.randrange(len(rows))
                keys = [k for k in names if isinstance(rows[i], dict) and k in rows[i]]
                if keys:
                    rows[i][rng.choice(keys)] = text
                    return Mutated(_dump_records(rows), False, f"{big}-byte name")
        out = _json_edit(data, t, rng, _is_text_value, lambda old: text)
        return None if out is None else Mutated(out, False, f"{big}-byte string")
    if t.kind == "toml":
        out = _json_edit(data, t, rng, lambda v: v.startswith('"'), lambda old: f'"{text}"')
        return None if out is None else Mutated(out, False, f"{big}-byte TOML string")
    if t.kind == "text":  # appended to one line: a 1 MiB lesson, or a huge line of code
        lines = _lines(data) or [b""]
        i = rng.randrange(len(lines))
        body = lines[i].rstrip(b"\r\n")
        lines[i] = body + text.encode("utf-8") + lines[i][len(body) :]
        return Mutated(b"".join(lines), False, f"{big}-byte line {i + 1}")
    return None


def _wrong_value(old: Any) -> Any:
    if isinstance(old, str):
        return {"not": ["a string"]}
    if isinstance(old, bool) or isinstance(old, int | float):
        return "not a number"
    if isinstance(old, list):
        return "not a list"
    if isinstance(old, dict):
        return ["not", "an", "object"]
    return {"x": 1}


def wrong_type(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A required field of the wrong type (an object for a string, text for a number)."""
    if t.kind == "jsonl":
        rows = _records(data)
        if not rows:
            return None
        spots = [
            (i, k)
            for i, r in enumerate(rows)
            if isinstance(r, dict)
            for k in t.required
            if k in r and r[k] is not None
        ]
        if not spots:
            return None
        i, k = rng.choice(spots)
        rows[i][k] = _wrong_value(rows[i][k])
        return Mutated(_dump_records(rows), True, f"line {i + 1}: {k} of a wrong type")
    if t.kind == "json":
        doc = json.loads(data)
        keys = [k for k in t.required if k in doc]
        if not keys:
            return None
        k = rng.choice(keys)
        doc[k] = _wrong_value(doc[k])
        return Mutated(json.dumps(doc).encode(), True, f"{k} of a wrong type")
    if t.kind == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
        numeric = [
            j
            for j, name in enumerate(rows[0])
            if name in t.required and name in ("rating", "func", "if")
        ]
        if not numeric or len(rows) < 2:
            return None
        i, j = rng.randrange(1, len(rows)), rng.choice(numeric)
        rows[i][j] = "not a number"
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        return Mutated(out.getvalue().encode(), True, f"row {i}: {rows[0][j]} not a number")
    if t.kind == "toml":
        text = data.decode("utf-8").splitlines(keepends=True)
        spots = [i for i, x in enumerate(text) if re.match(r"\s*(\w+)\s*=", x)]
        i = rng.choice(spots)
        key = text[i].split("=", 1)[0].strip()
        text[i] = f"{key} = {{ wrong = [1, 2] }}\n"
        # a wrong type is invalid for every key these seeds hold
        return Mutated("".join(text).encode(), True, f"{key} of a wrong type")
    return None


def missing_field(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A required field (or column) removed."""
    if not t.required:
        return None
    if t.kind == "jsonl":
        rows = _records(data)
        if not rows:
            return None
        spots = [
            (i, k) for i, r in enumerate(rows) if isinstance(r, dict) for k in t.required if k in r
        ]
        if not spots:
            return None
        i, k = rng.choice(spots)
        del rows[i][k]
        return Mutated(_dump_records(rows), True, f"line {i + 1}: {k} removed")
    if t.kind == "json":
        doc = json.loads(data)
        keys = [k for k in t.required if k in doc]
        if not keys:
            return None
        k = rng.choice(keys)
        del doc[k]
        return Mutated(json.dumps(doc).encode(), True, f"{k} removed")
    if t.kind == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
        cols = [j for j, name in enumerate(rows[0]) if name in t.required]
        if not cols:
            return None
        j = rng.choice(cols)
        name = rows[0][j]
        rows = [r[:j] + r[j + 1 :] for r in rows]
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        return Mutated(out.getvalue().encode(), True, f"column {name} removed")
    if t.kind == "toml":
        text = data.decode("utf-8").splitlines(keepends=True)
        spots = [
            i
            for i, x in enumerate(text)
            if re.match(r"\s*(\w+)\s*=", x) and x.split("=")[0].strip() in t.required
        ]
        if not spots:
            return None
        i = rng.choice(spots)
        key = text[i].split("=")[0].strip()
        del text[i]
        return Mutated("".join(text).encode(), True, f"{key} removed")
    return None


def junk_after(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """Junk after valid content: a line that is not a record."""
    if t.kind == "sqlite":
        return Mutated(data + b"junk" * 100, False, "bytes after the database")
    if t.kind == "text":
        return None
    junk = rng.choice(
        {
            "jsonl": [b"junk\n", b"}{\n", b"[1, 2]\n", b'"text"\n', b"null\n", b'{"a": 1,\n'],
            "json": [b"\njunk\n", b"\n{}\n", b"]"],
            "csv": [b'"unterminated\n', b"junk\n", b"a,b,c,d,e,f,g,h,i,j,k\n"],
            "toml": [b"\njunk\n", b"\n[[\n", b"\nx = \n"],
        }[t.kind]
    )
    body = data if data.endswith(b"\n") or t.kind == "json" else data + b"\n"
    return Mutated(body + junk, True, f"junk {junk!r} at the end")


def empty(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """An empty file (or only blank lines)."""
    return Mutated(rng.choice([b"", b"\n", b"\n\n  \n"]), t.records_required, "empty file")


def corrupt_gzip(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """The file gzipped, then truncated or with bytes flipped (named .gz)."""
    if not t.gz:
        return None
    packed = bytearray(gzip.compress(data))
    if rng.random() < 0.5:
        packed = packed[: rng.randrange(10, len(packed) - 1)]
        note = "truncated gzip"
    else:
        for _ in range(4):
            i = rng.randrange(10, len(packed))
            packed[i] ^= 0xFF
        note = "gzip with flipped bytes"
    return Mutated(bytes(packed), True, note)


def corrupt_sqlite(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A database with its header or pages overwritten (or not a database at all)."""
    if t.kind != "sqlite":
        return None
    raw = bytearray(data)
    how = rng.choice(["header", "pages", "text", "zeros"])
    if how == "header":
        raw[:16] = b"not a database!!"
    elif how == "pages":
        for _ in range(64):
            raw[rng.randrange(100, len(raw))] = rng.randrange(256)
    elif how == "text":
        raw = bytearray(b'{"this": "is json, not sqlite"}\n')
    else:
        raw[100:] = bytes(len(raw) - 100)
    return Mutated(bytes(raw), False, f"sqlite {how}")


def sqlite_values(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A cache with a row holding a huge model name, a lone surrogate, NULLs, blobs or text
    dates, its table remade as another tool might (no types, no NOT NULL).

    Invalid when the row is not what prefjudge writes (``cache info`` must warn)."""
    if t.kind != "sqlite":
        return None
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.sqlite"
        path.write_bytes(data)
        conn = sqlite3.connect(path)
        how = rng.choice(["huge", "surrogate", "null", "blob", "created", "json"])
        values: dict[str, Any] = {
            "huge": ("x" * big, 1.0),
            "surrogate": (b"m\xed\xa0\x80", 1.0),
            "null": (None, None),
            "blob": (b"\xff\xfe", b"\x00"),
            "created": ("m", "yesterday"),
            "json": ("m\x1b[31m", float("nan")),
        }
        model, created = values[how]
        fmt = rng.choice([2, 1, None, "x"])
        # the table as another tool might make it: no types, no NOT NULL (issue 43)
        conn.execute("ALTER TABLE responses RENAME TO fuzz_old")
        conn.execute(
            "CREATE TABLE responses (key PRIMARY KEY, model, created, response,"
            " backend, endpoint, format)"
        )
        conn.execute(
            "INSERT INTO responses SELECT key, model, created, response, backend,"
            " endpoint, format FROM fuzz_old"
        )
        conn.execute("DROP TABLE fuzz_old")
        try:
            conn.execute(
                "INSERT INTO responses (key, model, created, response, backend, endpoint, format)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    "fuzz",
                    model,
                    created,
                    "{}",
                    rng.choice(["openai", None, "x" * 300]),
                    rng.choice([DEAD_URL, None, "\u2028"]),
                    fmt,
                ),
            )
            conn.commit()
        except sqlite3.IntegrityError:
            conn.close()
            return None
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()
        # not what prefjudge writes (cache info must warn): all but a huge name's row
        damaged = how != "huge" or fmt == "x"
        return Mutated(path.read_bytes(), damaged, f"cache row: {how}, format {fmt!r}")


def duplicate_keys(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """A key given twice in one object (JSON takes the last; TOML forbids it)."""
    if t.kind == "jsonl":
        lines = _lines(data)
        spots = [i for i, x in enumerate(lines) if x.lstrip().startswith(b'{"')]
        if not spots:
            return None
        i = rng.choice(spots)
        if rng.random() < 0.5:  # first: JSON keeps the later, valid value
            lines[i] = b'{"task_id": {"dup": 1}, ' + lines[i].lstrip()[1:]
            return Mutated(b"".join(lines), False, f"line {i + 1}: a key twice")
        try:
            record = json.loads(lines[i])
        except ValueError:
            return None
        if not isinstance(record, dict) or not record:
            return None
        key = rng.choice(sorted(record))
        value = rng.choice(['{"dup": 1}', "null", '"x"', "[]", "NaN", "-1"])
        body = lines[i].rstrip(b"\r\n").rstrip()
        if not body.endswith(b"}"):
            return None
        again = f", {json.dumps(key)}: {value}}}\n".encode()
        lines[i] = body[:-1] + again  # last: JSON keeps this value (issue 43: features_a)
        return Mutated(b"".join(lines), False, f"line {i + 1}: {key} again, last: {value}")
    if t.kind == "toml":
        lines = data.decode("utf-8").splitlines(keepends=True)
        spots = [i for i, x in enumerate(lines) if re.match(r"\s*\w+\s*=", x)]
        i = rng.choice(spots)
        lines.insert(i + 1, lines[i] if lines[i].endswith("\n") else lines[i] + "\n")
        return Mutated("".join(lines).encode(), True, "a TOML key twice")
    if t.kind == "csv":
        lines = _lines(data)
        header = lines[0].rstrip(b"\r\n")
        first = header.split(b",")[0]
        lines[0] = header + b"," + first + b"\n"
        lines[1:] = [x.rstrip(b"\r\n") + b",dup\n" for x in lines[1:]]
        return Mutated(b"".join(lines), False, "a column twice")
    return None


def _all_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every value (scalars, objects and lists) below a JSON value."""
    found: list[tuple[Any, ...]] = []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for k, v in items:
        found.append((*path, k))
        found += _all_paths(v, (*path, k))
    return found


def _nested_edit(
    data: bytes,
    t: Target,
    rng: random.Random,
    edit: Callable[[Any, Any], None],
    want: Callable[[Any, Any], bool],
) -> bytes | None:
    """Apply ``edit(parent, key)`` at a random nested spot of one record (or the document)."""
    if t.kind == "jsonl":
        rows = _records(data)
        if not rows:
            return None
        i = rng.randrange(len(rows))
        doc: Any = rows[i]
    elif t.kind == "json":
        doc = json.loads(data)
    else:
        return None
    spots = [p for p in _all_paths(doc) if want(_get(doc, p[:-1]), p[-1])]
    if not spots:
        return None
    path = rng.choice(spots)
    edit(_get(doc, path[:-1]), path[-1])
    if t.kind == "jsonl":
        rows[i] = doc
        return _dump_records(rows)
    return json.dumps(doc, indent=1).encode("utf-8")


def drop_key(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """Any key removed, however deep (an optional one may go: never a silent accept)."""

    def edit(parent: Any, key: Any) -> None:
        del parent[key]

    out = _nested_edit(data, t, rng, edit, lambda parent, key: isinstance(parent, dict))
    return None if out is None else Mutated(out, False, "a nested key removed")


def retype_any(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """Any value, however deep, of another type (null, text, a list, an object, a number)."""
    value = rng.choice([None, "text", [], {}, 0, -1, True, [[1]], {"x": {}}])

    def edit(parent: Any, key: Any) -> None:
        parent[key] = value

    out = _nested_edit(data, t, rng, edit, lambda parent, key: True)
    return None if out is None else Mutated(out, False, f"a nested value -> {value!r}")


def duplicate_record(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """One record twice (same ids)."""
    if t.kind != "jsonl":
        return None
    lines = [x for x in _lines(data) if x.strip()]
    if not lines:
        return None
    i = rng.randrange(len(lines))
    line = lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n"
    lines.insert(i, line)
    return Mutated(b"".join(lines), False, f"line {i + 1} twice")


def unchanged(data: bytes, t: Target, rng: random.Random, big: int) -> Mutated | None:
    """The seed itself (every target must accept it: checks the harness)."""
    return Mutated(data, False, "seed")


MUTATORS: dict[str, Mutator] = {
    "unchanged": unchanged,
    "truncate_mid": truncate_mid,
    "truncate_line": truncate_line,
    "bad_utf8": bad_utf8,
    "utf16": utf16,
    "cp1252": cp1252,
    "lone_surrogate": lone_surrogate,
    "control_chars": control_chars,
    "deep_nesting": deep_nesting,
    "nan_numbers": nan_numbers,
    "huge_name": huge_name,
    "wrong_type": wrong_type,
    "missing_field": missing_field,
    "junk_after": junk_after,
    "empty": empty,
    "corrupt_gzip": corrupt_gzip,
    "corrupt_sqlite": corrupt_sqlite,
    "sqlite_values": sqlite_values,
    "duplicate_keys": duplicate_keys,
    "duplicate_record": duplicate_record,
    "drop_key": drop_key,
    "retype_any": retype_any,
}
