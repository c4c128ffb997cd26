r"""Single-turn and multi-turn interaction protocols: prompt building and the generation loop.

Prompts are framed as the SWE-IF paper's reference generator frames them
(``maszhongming/SWE-IF``, ``swe_if/code_generator.py``, commit 767d190) unless told
otherwise:

* **system prompt**: every request starts with a system message, the reference text for
  the task's benchmark (:func:`prompt_benchmark`: LiveCodeBench, or BigCodeBench for every
  other benchmark), read from ``rubrics/prompts/generation_system_*.md``. A
  :class:`SystemPrompt` can instead send none (the old behaviour) or one file's text.
* **single**: one user turn. With the ``reference`` framing (:data:`FRAMINGS`) the task's
  prompt, unchanged (not stripped, as the reference does not strip it), then a blank line
  and ``Additionally, ensure your code meets the following requirement: <text>`` for one
  instruction, or the plural header followed by ``\n1. <text>``, ``\n2. <text>``, ... for
  several. The ``numbered`` framing is prefjudge's earlier form: the stripped prompt, then
  :data:`SINGLE_TURN_HEADER` and the numbered instructions (one instruction numbered too).
* **multi**: turn 1 is the task's prompt alone; each later turn is one instruction's
  multi-turn (edit) template alone, sent with the full history, previous assistant replies
  included (the same under both framings). The last turn's reply is the generation's
  ``response``; every turn is kept.

LiveCodeBench: the reference also puts a "Problem Type" block (stdin/stdout or functional)
before the problem text. prefjudge does not: every LiveCodeBench task it loads
(:mod:`prefjudge.scoring.tasks`) already ends with its own note saying how it is evaluated
(a complete stdin/stdout program, or the ``class Solution`` starter code), and the
reference's functional block asks for a ``solve()`` function, which would contradict that
starter code.

k = 0 is the plain prompt for both protocols. One run covers a list of k values so FR_k can
be computed against k = 0. Multi-turn generations of one task (and sample) share one
conversation: the k = j generation is its first j + 1 turns, so k = 0..5 costs 6 model
calls per task, not 21. Every round sends the same turn of all conversations to the backend
in one ``generate`` call (vLLM batches them); identical requests in a round are sent once
(single-turn and multi-turn k = 0 are the same request).

A failed model call never drops a generation: its turn records the ``error``, and the
generation is written with ``response == ""`` and an ``error`` field (the later turns of a
failed conversation are not attempted). The record is
:class:`~prefjudge.records.ProtocolGeneration` (re-exported here), with two extra fields:
``framing`` and ``system_prompt_sha256`` (the SHA-256 of the system message its requests
began with, or None)::

    runner = ProtocolRunner(backend, tasks, protocols=["single", "multi"], ks=range(6),
                            sampling=Sampling(max_tokens=1024))
    for generation in runner.run():
        out.write(generation)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prefjudge.backends.base import Backend, Message, Request, Result, Sampling
from prefjudge.records import AugmentedTask, InstructionRef, ProtocolGeneration, ProtocolName, Turn
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy
from prefjudge.testbed.protocol_prompts import (
    FRAMINGS,
    NO_SYSTEM_PROMPT,
    PROTOCOLS,
    REFERENCE_HEADER_MANY,
    REFERENCE_HEADER_ONE,
    REFERENCE_SYSTEM_PROMPT,
    SINGLE_TURN_HEADER,
    SYSTEM_PROMPT_FILES,
    Benchmark,
    Framing,
    SystemPrompt,
    framing_settings,
    generation_id,
    instruction_problems,
    multi_turn_prompts,
    parse_k,
    prompt_benchmark,
    read_prompt_file,
    reference_system_prompt,
    single_turn_prompt,
    text_sha256,
)

__all__ = [
    "FRAMINGS",
    "NO_SYSTEM_PROMPT",
    "PROTOCOLS",
    "REFERENCE_HEADER_MANY",
    "REFERENCE_HEADER_ONE",
    "REFERENCE_SYSTEM_PROMPT",
    "SINGLE_TURN_HEADER",
    "SYSTEM_PROMPT_FILES",
    "Benchmark",
    "Framing",
    "ProtocolGeneration",
    "ProtocolName",
    "ProtocolRunner",
    "SystemPrompt",
    "framing_settings",
    "generation_id",
    "instruction_problems",
    "multi_turn_prompts",
    "parse_k",
    "prompt_benchmark",
    "read_prompt_file",
    "reference_system_prompt",
    "single_turn_prompt",
    "text_sha256",
]


@dataclass
class _Conversation:
    """One chat with the model: a task, a protocol, a sample; serves one or more k values."""

    task: AugmentedTask
    protocol: ProtocolName
    sample: int
    prompts: list[str]  # user turns to send, in order
    instructions: list[InstructionRef | None]  # the instruction each turn adds
    emit: dict[int, list[int]]  # number of turns -> k values finished at that turn
    system: str | None = None  # the system message every request begins with
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
        if self.system is not None:
            history.append(Message(role="system", content=self.system))
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
        framing: Framing = "reference",
        system_prompt: SystemPrompt = REFERENCE_SYSTEM_PROMPT,
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
            framing: How single-turn prompts add their instructions (``reference`` or
                ``numbered``; see :func:`single_turn_prompt`).
            system_prompt: The system message every request begins with (by default the
                SWE-IF reference text of each task's benchmark).

        Raises:
            ValueError: On an unknown framing.
        """
        if framing not in FRAMINGS:
            raise ValueError(f"unknown framing {framing!r}: expected one of {', '.join(FRAMINGS)}")
        self.framing = framing
        self.system_prompt = system_prompt
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
        system = self.system_prompt.for_task(task)
        if protocol == "single":
            for k in todo:
                refs = task.instructions[:k]
                prompt = single_turn_prompt(task.prompt, refs, self.taxonomy, framing=self.framing)
                self.conversations.append(
                    _Conversation(task, protocol, sample, [prompt], [None], {1: [k]}, system)
                )
            return
        most = max(todo)
        refs = task.instructions[:most]
        prompts = multi_turn_prompts(task.prompt, refs, self.taxonomy)
        emit: dict[int, list[int]] = {}
        for k in todo:
            emit.setdefault(k + 1, []).append(k)
        conv = _Conversation(task, protocol, sample, prompts, [None, *refs], emit, system)
        conv.turns = self._resumed_turns(conv, ks)
        self.conversations.append(conv)

    def _resumed_turns(self, conv: _Conversation, ks: list[int]) -> list[Turn]:
        """The longest error-free prefix already written for this conversation.

        Only records made with the same system message count (a record without
        ``system_prompt_sha256`` was made with none).
        """
        best: list[Turn] = []
        digest = None if conv.system is None else text_sha256(conv.system)
        for k in ks:
            record = self.done.get(generation_id(conv.task.task_id, "multi", k, conv.sample))
            if record is None or record.error is not None or len(record.turns) <= len(best):
                continue
            if (record.model_extra or {}).get("system_prompt_sha256") != digest:
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
            framing=self.framing,
            system_prompt_sha256=None if conv.system is None else text_sha256(conv.system),
        )
