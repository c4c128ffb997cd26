"""Single-turn and multi-turn interaction protocols: prompt building and the generation loop.

* **single**: one user turn, the task's prompt followed by :data:`SINGLE_TURN_HEADER` and
  the first k instructions, numbered (single-turn templates).
* **multi**: turn 1 is the task's prompt alone; each later turn adds one instruction
  (multi-turn template) to the full history, previous assistant replies included. The last
  turn's reply is the generation's ``response``; every turn is kept.

k = 0 is the plain prompt for both protocols. One run covers a list of k values so FR_k can
be computed against k = 0. Multi-turn generations of one task (and sample) share one
conversation: the k = j generation is its first j + 1 turns, so k = 0..5 costs 6 model
calls per task, not 21. Every round sends the same turn of all conversations to the backend
in one ``generate`` call (vLLM batches them); identical requests in a round are sent once
(single-turn and multi-turn k = 0 are the same request).

A failed model call never drops a generation: its turn records the ``error``, and the
generation is written with ``response == ""`` and an ``error`` field (the later turns of a
failed conversation are not attempted). The record is
:class:`~prefjudge.records.ProtocolGeneration` (re-exported here)::

    runner = ProtocolRunner(backend, tasks, protocols=["single", "multi"], ks=range(6),
                            sampling=Sampling(max_tokens=1024))
    for generation in runner.run():
        out.write(generation)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefjudge.backends.base import Backend, Message, Request, Result, Sampling
from prefjudge.records import (
    AugmentedTask,
    InstructionRef,
    ProtocolGeneration,
    ProtocolName,
    Turn,
)
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy

__all__ = [
    "PROTOCOLS",
    "SINGLE_TURN_HEADER",
    "ProtocolGeneration",
    "ProtocolName",
    "ProtocolRunner",
    "generation_id",
    "instruction_problems",
    "multi_turn_prompts",
    "parse_k",
    "single_turn_prompt",
]

PROTOCOLS: tuple[ProtocolName, ...] = ("single", "multi")
SINGLE_TURN_HEADER = "Also, generate the code to meet the following requirements:"


def generation_id(task_id: str, protocol: str, k: int, sample: int = 0) -> str:
    """Return the id of one generation: ``{task_id}::{protocol}::k{k}::s{sample}``."""
    return f"{task_id}::{protocol}::k{k}::s{sample}"


def parse_k(text: str) -> list[int]:
    """Parse a k specification: ``"0..5"``, ``"3"``, ``"1,3,5"`` or a mix (``"0,2..4"``).

    Args:
        text: The specification.

    Returns:
        The distinct k values, ascending.

    Raises:
        ValueError: When a part is not a non-negative integer or an ascending range.
    """
    values: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        match = re.fullmatch(r"(\d+)(?:\s*\.\.\s*(\d+))?", part)
        if not match:
            raise ValueError(f"bad k {part!r}: expected N, A..B or a comma-separated list")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            raise ValueError(f"bad k range {part!r}: the end is below the start")
        values.update(range(low, high + 1))
    return sorted(values)


def single_turn_prompt(
    prompt: str, refs: Sequence[InstructionRef], taxonomy: Taxonomy | None = None
) -> str:
    """Build the single-turn prompt: the task followed by the numbered instructions.

    Args:
        prompt: The task's original prompt.
        refs: Instructions to add (none gives the plain prompt).
        taxonomy: Taxonomy with the templates (the bundled one by default).

    Returns:
        The user message.
    """
    if not refs:
        return prompt
    taxonomy = taxonomy or load_taxonomy()
    lines = [f"{i}. {taxonomy.prompt(ref)}" for i, ref in enumerate(refs, start=1)]
    return f"{prompt.rstrip()}\n\n{SINGLE_TURN_HEADER}\n" + "\n".join(lines)


def multi_turn_prompts(
    prompt: str, refs: Sequence[InstructionRef], taxonomy: Taxonomy | None = None
) -> list[str]:
    """Build the user turns of the multi-turn protocol.

    Args:
        prompt: The task's original prompt (turn 1).
        refs: Instructions, one per later turn.
        taxonomy: Taxonomy with the templates (the bundled one by default).

    Returns:
        ``len(refs) + 1`` user messages.
    """
    taxonomy = taxonomy or load_taxonomy()
    return [prompt, *(taxonomy.prompt(ref, multi_turn=True) for ref in refs)]


def instruction_problems(
    tasks: Iterable[AugmentedTask], ks: Iterable[int], taxonomy: Taxonomy | None = None
) -> list[str]:
    """List problems with the instructions the run would use (unknown ids, bad parameters).

    Args:
        tasks: Augmented tasks.
        ks: The k values to run.
        taxonomy: The taxonomy (the bundled one by default).

    Returns:
        One line per problem; empty when every prompt can be built.
    """
    taxonomy = taxonomy or load_taxonomy()
    most = max(ks, default=0)
    problems = []
    for task in tasks:
        for index, ref in enumerate(task.instructions[:most]):
            for fld, message in taxonomy.problems(ref):
                where = f"{task.task_id}: instructions.{index}" + (f".{fld}" if fld else "")
                problems.append(f"{where}: {message}")
    return problems


@dataclass
class _Conversation:
    """One chat with the model: a task, a protocol, a sample; serves one or more k values."""

    task: AugmentedTask
    protocol: ProtocolName
    sample: int
    prompts: list[str]  # user turns to send, in order
    instructions: list[InstructionRef | None]  # the instruction each turn adds
    emit: dict[int, list[int]]  # number of turns -> k values finished at that turn
    turns: list[Turn] = field(default_factory=list)
    error: str | None = None

    @property
    def next_index(self) -> int:
        return len(self.turns)

    @property
    def active(self) -> bool:
        return self.error is None and self.next_index < len(self.prompts)

    @property
    def label(self) -> str:
        if self.protocol == "single":
            return generation_id(self.task.task_id, "single", self.emit[1][0], self.sample)
        return f"{self.task.task_id}::multi::s{self.sample}"

    def messages(self) -> tuple[Message, ...]:
        history: list[Message] = []
        for turn in self.turns:
            history.append(Message(role="user", content=turn.prompt))
            history.append(Message(role="assistant", content=turn.response))
        history.append(Message(role="user", content=self.prompts[self.next_index]))
        return tuple(history)


class ProtocolRunner:
    """Run the protocols over augmented tasks, batching each turn across tasks.

    Attributes:
        skipped: ``(task_id, k)`` pairs left out because the task has fewer than k
            instructions.
        done: Generations already in the output (by id) that are not made again.
        total_calls: Requests the run sends at most (a progress bar's total).
        total_generations: Generations the run writes.
    """

    def __init__(
        self,
        backend: Backend,
        tasks: Iterable[AugmentedTask],
        *,
        protocols: Iterable[ProtocolName] = PROTOCOLS,
        ks: Iterable[int] = (0,),
        sampling: Sampling | None = None,
        samples: int = 1,
        taxonomy: Taxonomy | None = None,
        done: Mapping[str, Mapping[str, Any] | ProtocolGeneration] | None = None,
        model_name: str | None = None,
    ):
        """Plan the run.

        Args:
            backend: The model backend.
            tasks: Augmented tasks (their instructions in selection order).
            protocols: ``single`` and/or ``multi``.
            ks: Numbers of instructions to run (the first k of each task).
            sampling: Sampling parameters for every call.
            samples: Samples per prompt (ids end in ``::s0``, ``::s1``, ...).
            taxonomy: Taxonomy with the prompt templates (the bundled one by default).
            done: Records already written, by id (resuming): not made again; a multi-turn
                conversation continues from the turns of the longest one without error.
            model_name: The ``model`` written in every record (default: the backend's
                model identity).
        """
        self.backend = backend
        self.model_name = model_name or backend.model_id
        self.sampling = sampling or Sampling()
        self.taxonomy = taxonomy or load_taxonomy()
        self.done = {
            key: ProtocolGeneration.model_validate(value) for key, value in (done or {}).items()
        }
        self.skipped: list[tuple[str, int]] = []
        self.conversations: list[_Conversation] = []
        k_values = sorted(set(ks))
        for task in tasks:
            usable = [k for k in k_values if k <= len(task.instructions)]
            self.skipped.extend((task.task_id, k) for k in k_values if k not in usable)
            for sample in range(samples):
                for protocol in dict.fromkeys(protocols):
                    self._plan(task, protocol, sample, usable)
        self.total_generations = sum(
            len(ks_) for conv in self.conversations for ks_ in conv.emit.values()
        )
        self.total_calls = sum(
            len(conv.prompts) - len(conv.turns) for conv in self.conversations
        )

    def _plan(
        self, task: AugmentedTask, protocol: ProtocolName, sample: int, ks: list[int]
    ) -> None:
        todo = [k for k in ks if generation_id(task.task_id, protocol, k, sample) not in self.done]
        if not todo:
            return
        if protocol == "single":
            for k in todo:
                refs = task.instructions[:k]
                prompt = single_turn_prompt(task.prompt, refs, self.taxonomy)
                self.conversations.append(
                    _Conversation(task, protocol, sample, [prompt], [None], {1: [k]})
                )
            return
        most = max(todo)
        refs = task.instructions[:most]
        prompts = multi_turn_prompts(task.prompt, refs, self.taxonomy)
        emit: dict[int, list[int]] = {}
        for k in todo:
            emit.setdefault(k + 1, []).append(k)
        conv = _Conversation(task, protocol, sample, prompts, [None, *refs], emit)
        conv.turns = self._resumed_turns(conv, ks)
        self.conversations.append(conv)

    def _resumed_turns(self, conv: _Conversation, ks: list[int]) -> list[Turn]:
        """The longest error-free prefix already written for this conversation."""
        best: list[Turn] = []
        for k in ks:
            record = self.done.get(generation_id(conv.task.task_id, "multi", k, conv.sample))
            if record is None or record.error is not None or len(record.turns) <= len(best):
                continue
            turns = record.turns[: len(conv.prompts)]
            if [t.prompt for t in turns] == conv.prompts[: len(turns)]:
                best = [t.model_copy() for t in turns]
        return best

    def run(
        self, on_result: Callable[[Result], None] | None = None
    ) -> Iterator[ProtocolGeneration]:
        """Make the generations, yielding each as soon as it is complete.

        Args:
            on_result: Called once per conversation turn answered (e.g. a progress bar).

        Yields:
            Generations, in the order they finish.

        Raises:
            BackendError: When the backend cannot work at all.
        """
        for conv in self.conversations:  # turns restored from the output
            yield from self._finished(conv, up_to=len(conv.turns), start=0)
        while True:
            active = [conv for conv in self.conversations if conv.active]
            if not active:
                return
            for result, members in self._round(active, on_result):
                for conv in members:
                    index = conv.next_index
                    turn = Turn(
                        index=index + 1,
                        prompt=conv.prompts[index],
                        response=(result.text or "") if result.ok else "",
                        instruction=conv.instructions[index],
                        error=result.error,
                    )
                    conv.turns.append(turn)
                    if result.error is not None:
                        conv.error = f"turn {index + 1} failed: {result.error}"
                    yield from self._finished(conv, up_to=index + 1, start=index)

    def _round(
        self, active: list[_Conversation], on_result: Callable[[Result], None] | None
    ) -> list[tuple[Result, list[_Conversation]]]:
        """Send the next turn of every active conversation in one ``generate`` call."""
        groups: dict[tuple[tuple[Message, ...], int], list[_Conversation]] = {}
        for conv in active:
            groups.setdefault((conv.messages(), conv.sample), []).append(conv)
        requests = []
        members_of: dict[str, list[_Conversation]] = {}
        for (messages, sample), members in groups.items():
            first = members[0]
            request = Request(
                id=f"{first.label}::t{first.next_index + 1}",
                messages=messages,
                sampling=self.sampling,
                sample=sample,
            )
            requests.append(request)
            members_of[request.id] = members

        def relay(result: Result) -> None:
            if on_result is not None:
                for _ in members_of.get(result.request_id, ()):
                    on_result(result)

        results = self.backend.generate(requests, on_result=relay)
        return [(result, members_of[req.id]) for req, result in zip(requests, results, strict=True)]

    def _finished(
        self, conv: _Conversation, *, up_to: int, start: int
    ) -> Iterator[ProtocolGeneration]:
        """Yield the generations whose last turn is among turns ``start + 1 .. up_to``."""
        for count in range(start + 1, up_to + 1):
            for k in conv.emit.get(count, ()):
                yield self._record(conv, k, conv.turns[:count])
        if conv.error is not None:  # the longer generations cannot be made
            for count, ks in sorted(conv.emit.items()):
                if count > up_to:
                    for k in ks:
                        yield self._record(conv, k, list(conv.turns))

    def _record(self, conv: _Conversation, k: int, turns: list[Turn]) -> ProtocolGeneration:
        last = turns[-1]
        failed = conv.error is not None and last.error is not None
        return ProtocolGeneration(
            id=generation_id(conv.task.task_id, conv.protocol, k, conv.sample),
            task_id=conv.task.task_id,
            model=self.model_name,
            response="" if failed else last.response,
            instructions=list(conv.task.instructions[:k]),
            protocol=conv.protocol,
            k=k,
            sample=conv.sample,
            turns=turns,
            error=conv.error if failed else None,
        )
