"""Batches overlap in the verification process: the next one's Python checks run while
this one's Ruff runs end.

Issue 44 (the engine's speed reaches the user): the verification process waited on Ruff
for 3.7 s of its 8 s on 50,000 generations, one batch at a time. Now
:func:`~prefjudge.scoring.verify.engine.start_verify_batch` starts a batch (Ruff in the
background, Python checks at once) and ``finish()`` waits for it; the process's loop
starts the next waiting batch before it finishes the one before. Replies still come one
per request, in order, each equal to ``verify_batch``'s.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import pytest
from test_verify_process import real_items

from prefjudge.scoring.verify import process, runners, verify_batch
from prefjudge.scoring.verify.engine import start_verify_batch


def test_two_started_batches_finish_as_verify_batch_gives_them(
    shared_data: Path, tmp_path: Path, monkeypatch
) -> None:
    items = real_items(shared_data, 60, seed=11)
    monkeypatch.setattr(runners, "scratch_root", lambda: str(tmp_path))  # Ruff's files here
    first = start_verify_batch(items[:35], workers=2)
    second = start_verify_batch(items[35:], workers=2)  # started before the first ends
    assert len(list(tmp_path.glob("prefjudge-ruff-*"))) == 2  # both batches' files meanwhile
    found = first.finish() + second.finish()
    assert list(tmp_path.iterdir()) == []
    assert found == verify_batch(items, workers=2)
    given_up = start_verify_batch(items[:5], workers=2)
    given_up.close()
    assert list(tmp_path.iterdir()) == []


def _pack(items: list) -> list:
    return [(text, [(ref.id, ref.params) for ref in refs], False, None)
            for text, refs in items]


def test_the_loop_starts_the_next_batch_before_it_answers_this_one(shared_data, monkeypatch):
    items = real_items(shared_data, 40, seed=12)
    batches = [_pack(items[:15]), _pack(items[15:20]), _pack(items[20:])]
    events: list[str] = []
    start_packed = process.start_packed

    def watched_start(packed, profile, workers):
        name = f"batch of {len(packed)}"
        if profile == "no-such-profile":
            events.append(f"refused {name}")
        else:
            events.append(f"start {name}")
        started = start_packed(packed, profile, workers)

        class Watched:
            def finish(self):
                events.append(f"finish {name}")
                return started.finish()

        return Watched()

    monkeypatch.setattr(process, "start_packed", watched_start)
    requests = io.BytesIO()
    for packed, profile in [(batches[0], "reference"), (batches[1], "no-such-profile"),
                            (batches[2], "reference")]:
        pickle.dump((packed, profile, 2), requests)
    requests.seek(0)
    replies = io.BytesIO()
    process.serve(requests, replies)
    replies.seek(0)
    answers = [pickle.load(replies) for _ in range(3)]
    assert replies.read() == b""  # one reply per request

    # Each batch was started before the one before it was finished.
    assert events == ["start batch of 15", "refused batch of 5", "finish batch of 15",
                      "start batch of 20", "finish batch of 20"]
    assert answers[0][0] == "ok" and answers[2][0] == "ok"
    assert answers[0][1] == process.verify_packed(batches[0], "reference", 2)
    assert answers[2][1] == process.verify_packed(batches[2], "reference", 2)
    expected = verify_batch(items[20:], workers=2)
    assert [[status for _, _, status, _ in row] for row in answers[2][1]] == [
        [check.status for check in row] for row in expected]
    # The refused batch fails alone, in its place, with the reason.
    assert answers[1][0] == "error" and "no-such-profile" in answers[1][1]


def test_a_request_that_cannot_be_read_stops_the_loop_after_the_batch_before(shared_data):
    items = real_items(shared_data, 6, seed=13)
    packed = _pack(items)
    requests = io.BytesIO(pickle.dumps((packed, "reference", 2)) + b"not a pickle")
    replies = io.BytesIO()
    with pytest.raises(pickle.UnpicklingError):
        process.serve(requests, replies)
    replies.seek(0)
    status, results, _ = pickle.load(replies)  # the batch asked before is answered first
    assert status == "ok" and results == process.verify_packed(packed, "reference", 2)
    assert replies.read() == b""
