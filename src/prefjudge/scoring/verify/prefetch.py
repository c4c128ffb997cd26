"""Verification started before it is asked for: the verification process reads ahead.

While ``prefjudge score`` reads and validates a large generations file (a second or more
on one core), its verification process (:mod:`prefjudge.scoring.verify.process`) would
sit idle on the other. Told the file's path, it reads the file itself and verifies what
the first batches will most likely be, until the first real batch arrives. Each guess is
kept under the exact item it verified (response, instruction ids, parameters in order,
whether the text is code); a batch asked for later takes the result of an item it holds
the very same item of, and verifies the rest as usual. A wrong guess (a line the reader
will refuse, a resumed run that starts further on) only costs the idle core its time:
the results are those of ``verify_batch`` on the items asked for, whatever was guessed.
How far into the file it got (:attr:`ReadAhead.reach`) goes back with every reply, so that
the command never verifies again what is held here.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Protocol

PackedItem = tuple[str, list[tuple[str, dict[str, Any]]], bool, str | None]
PackedResult = tuple[str, dict[str, Any], str, str]
Key = tuple[str, bool, str | None, tuple[tuple[str, str], ...]]

BATCH = 256
"""Generations guessed at a time (:func:`guessed_items`)."""
FIRST_CHUNK = 256
"""The first batch ``prefjudge score`` asks for (``prefjudge.scoring.score.CHUNK``)."""
LARGEST_CHUNK = 4096
"""The largest batch it asks for (``prefjudge.scoring.score.VERIFY_CHUNK``); its batches
double from :data:`FIRST_CHUNK` to this."""
LARGEST_BATCH = 4096
"""Generations verified ahead in one batch at most: a real batch waits at most one of these
(about a second)."""
GIVE_UP_LINES = 64
"""Lines read without a single guess before reading ahead stops (another format)."""
HELD_AT_MOST = 8192
"""Items verified ahead at most: what a second of reading lets it do, several times over,
with the memory they hold (and the work a resumed run may not use) bounded."""


def item_key(item: PackedItem) -> Key:
    """What makes two items the same for verification (parameters compared in order)."""
    text, refs, is_code, code = item
    return text, is_code, code, tuple((ident, repr(list(params.items())))
                                      for ident, params in refs)


def guessed_items(path: str | os.PathLike[str], profile: str) -> Iterator[list[PackedItem]]:
    """The items the file's prefjudge lines will be verified as, a batch at a time.

    Only what is sure to be checked as read: a line with a ``response`` and valid
    ``instructions`` (parameters resolved as the reader resolves them:
    :class:`~prefjudge.scoring.verify.refs.ReferenceCheck`)
    and no ``error``; anything else is left out (it is verified when asked for).

    Args:
        path: The generations file (plain JSONL; anything else gives nothing).
        profile: Verification profile (kept for the caller; the items do not depend on it).

    Yields:
        Lists of at most :data:`BATCH` packed items, in file order.
    """
    del profile
    for batch, _ in _guessed(path):
        yield batch


def _guessed(path: str | os.PathLike[str]) -> Iterator[tuple[list[PackedItem], int]]:
    """:func:`guessed_items`'s batches, each with the number of the last line read for it."""
    from prefjudge.scoring.taxonomy import load_taxonomy
    from prefjudge.scoring.verify.refs import ReferenceCheck

    check = ReferenceCheck(load_taxonomy()).check
    batch: list[PackedItem] = []
    seen = guessed = 0
    try:
        handle = open(path, encoding="utf-8")
    except OSError:
        return
    with handle:
        for line in handle:
            seen += 1
            item = _guess(line, check)
            if item is not None:
                guessed += 1
                batch.append(item)
                if len(batch) == BATCH:
                    yield batch, seen
                    batch = []
            elif not guessed and seen >= GIVE_UP_LINES:
                return
    if batch:
        yield batch, seen


def _guess(line: str, check_params: Callable[..., Any]) -> PackedItem | None:
    """One line's item, when it is a plain prefjudge generation with valid instructions."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("error") is not None:
        return None
    response, instructions = data.get("response"), data.get("instructions", [])
    if not isinstance(response, str) or not isinstance(instructions, list):
        return None
    refs = []
    for ref in instructions:
        if not isinstance(ref, dict) or not isinstance(ref.get("id"), str):
            return None
        params = ref.get("params", {})
        if not isinstance(params, dict):
            return None
        problems, resolved, _ = check_params(ref["id"], params)
        if problems:
            return None
        refs.append((ref["id"], resolved))
    return response, refs, data.get("response_is_code") is True, None


class ReadAhead:
    """The results verified ahead, handed out once to the batch that asks for them.

    Args:
        start: ``start_packed``: packed items, profile, workers -> the started batch, whose
            ``finish()`` gives the packed results.
        profile: The profile the results were verified with.

    Attributes:
        reach: How far into the file reading ahead got: every line up to this one
            (1-based, as the reader numbers them) that could be guessed was verified ahead,
            its result held until asked for; 0 when none was. The command asks for the
            held part of its last chunk rather than verifying it again itself.
    """

    def __init__(self, start: Callable[[list[PackedItem], str, int | None], Started],
                 profile: str) -> None:
        self._start, self.profile = start, profile
        self._held: dict[Key, list[PackedResult]] = {}
        self.reach = 0

    @property
    def held(self) -> int:
        """Items verified ahead and not yet asked for."""
        return len(self._held)

    def read_ahead(self, path: str | os.PathLike[str], workers: int | None,
                   requests: BinaryIO) -> None:
        """Verify the file's likely items until a request waits on ``requests``.

        The guesses are verified in batches of :func:`batch_sizes`: each pays Ruff's
        start-up and the checks' set-up once (ten batches of 256 cost two to three times
        the CPU of one of 2,560), and each holds whole batches of the command's, so that a
        batch asked for is held whole or not at all.

        Args:
            path: The generations file.
            workers: Ruff processes run in parallel.
            requests: The process's input; reading ahead stops once it has data.
        """
        pieces, sizes = _guessed(path), batch_sizes()
        while not _readable(requests) and len(self._held) < HELD_AT_MOST:
            batch, through = _take(pieces, min(next(sizes), HELD_AT_MOST - len(self._held)))
            if not batch:
                return
            results = self._start(batch, self.profile, workers).finish()
            for item, result in zip(batch, results, strict=True):
                self._held[item_key(item)] = result
            self.reach = through

    def verify(self, packed: list[PackedItem], profile: str,
               workers: int | None) -> list[list[PackedResult]]:
        """Results for ``packed``: those held (given up), the rest verified now.

        Args:
            packed: The batch asked for.
            profile: Its verification profile.
            workers: Ruff processes run in parallel.

        Returns:
            One packed result per item, as ``verify_packed`` gives them.
        """
        return self.start(packed, profile, workers).finish()

    def start(self, packed: list[PackedItem], profile: str, workers: int | None) -> Started:
        """:meth:`verify` in two steps: the rest started now, the results at ``finish()``.

        Args:
            packed: The batch asked for.
            profile: Its verification profile.
            workers: Ruff processes run in parallel.

        Returns:
            The started batch; its ``finish()`` gives what :meth:`verify` returns.
        """
        if not self._held or profile != self.profile:
            return self._start(packed, profile, workers)
        found = [self._held.pop(item_key(item), None) for item in packed]
        missing = [item for item, result in zip(packed, found, strict=True) if result is None]
        return _Merged(found, self._start(missing, profile, workers) if missing else None)


class Started(Protocol):
    """A batch being verified."""

    def finish(self) -> list[list[PackedResult]]:
        """Wait for the batch: one packed result per item."""


class _Merged:
    """A batch partly held: the held results, and the rest's as they finish."""

    def __init__(self, found: list[list[PackedResult] | None], rest: Started | None) -> None:
        self._found, self._rest = found, rest

    def finish(self) -> list[list[PackedResult]]:
        fresh = iter(self._rest.finish() if self._rest is not None else [])
        return [result if result is not None else next(fresh) for result in self._found]


def batch_sizes() -> Iterator[int]:
    """Sizes of the batches verified ahead: whole batches of the command's, about doubling.

    The command asks for :data:`FIRST_CHUNK` generations, then twice as many each time up
    to :data:`LARGEST_CHUNK`; a batch verified ahead is as many of those as make it at
    least twice the one before (the first: two of them), up to :data:`LARGEST_BATCH`:
    768, 3,072, 4,096, 4,096 ...

    Yields:
        Generations per batch, without end.
    """
    chunk, goal = FIRST_CHUNK, 2 * FIRST_CHUNK
    while True:
        size = 0
        while size < goal:
            size += chunk
            chunk = min(2 * chunk, LARGEST_CHUNK)
        yield size
        goal = min(2 * size, LARGEST_BATCH)


def _take(pieces: Iterator[tuple[list[PackedItem], int]],
          size: int) -> tuple[list[PackedItem], int]:
    """The next ``size`` items of ``pieces`` or fewer (whole pieces: at least one of them).

    Returns:
        The items, and the number of the last line read for them (0 when none were left).
    """
    batch: list[PackedItem] = []
    through = 0
    for piece, last_line in pieces:
        batch += piece
        through = last_line
        if len(batch) >= size:
            break
    return batch, through


def _readable(stream: BinaryIO) -> bool:
    """Whether a request is waiting on the process's input (never blocks)."""
    try:
        ready, _, _ = select.select([stream], [], [], 0)
    except (OSError, ValueError):
        return True  # cannot tell: stop reading ahead
    return bool(ready)
