"""The prompts of the interaction protocols: system prompts, framings, single- and multi-turn turns.

How each prompt is framed (the SWE-IF paper's reference framing, or prefjudge's earlier
``numbered`` one) is told in :mod:`prefjudge.testbed.protocols`, which runs the
generation loop with them and re-exports every name here.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prefjudge.paths import data_dir
from prefjudge.records import AugmentedTask, InstructionRef, ProtocolName, Task
from prefjudge.records import generation_id as generation_id  # re-exported: its home until now
from prefjudge.scoring.taxonomy import Taxonomy, load_taxonomy

PROTOCOLS: tuple[ProtocolName, ...] = ("single", "multi")


Framing = Literal["reference", "numbered"]
"""How single-turn instructions follow the task: the SWE-IF reference form, or numbered."""


FRAMINGS: tuple[Framing, ...] = ("reference", "numbered")


#: The ``numbered`` framing's header (prefjudge's earlier single-turn form).
SINGLE_TURN_HEADER = "Also, generate the code to meet the following requirements:"


#: The ``reference`` framing with one instruction: this, a space, the instruction.
REFERENCE_HEADER_ONE = "Additionally, ensure your code meets the following requirement:"


#: The ``reference`` framing with several: this, then ``\n1. <text>``, ``\n2. <text>``, ...
REFERENCE_HEADER_MANY = "Additionally, ensure your code meets the following requirements:"


Benchmark = Literal["bigcodebench", "livecodebench"]
"""Which reference system prompt a task gets (every benchmark but LiveCodeBench: BigCodeBench)."""


#: The reference system prompts, under ``rubrics/prompts/``.
SYSTEM_PROMPT_FILES: dict[Benchmark, str] = {
    "bigcodebench": "generation_system_bigcodebench.md",
    "livecodebench": "generation_system_livecodebench.md",
}


def read_prompt_file(path: str | os.PathLike[str]) -> str:
    r"""Read a prompt file: its text less a leading ``<!-- ... -->`` comment and a final newline.

    The comment (the file's header: where the text comes from) is dropped with the line
    break after it; then one final ``\n``, if there is one, is dropped. Everything else is
    kept byte for byte (no other stripping).

    Args:
        path: The file (UTF-8).

    Returns:
        The prompt text.

    Raises:
        ValueError: When the file cannot be read, is not UTF-8, has an unclosed header
            comment, or holds no text.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the prompt ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: the prompt is not UTF-8 ({exc.reason})") from exc
    text = text.removeprefix("\ufeff")
    if text.startswith("<!--"):
        end = text.find("-->")
        if end < 0:
            raise ValueError(f"{path}: the header comment '<!--' is never closed by '-->'")
        text = text[end + 3 :].removeprefix("\n")
    text = text.removesuffix("\n")
    if not text.strip():
        raise ValueError(f"{path}: the prompt is empty")
    return text


@functools.cache
def reference_system_prompt(benchmark: Benchmark) -> str:
    """Return the SWE-IF reference generation system prompt for a benchmark.

    Args:
        benchmark: ``bigcodebench`` (used for every benchmark but LiveCodeBench) or
            ``livecodebench``.

    Returns:
        The text, exactly as the reference generator sends it.
    """
    return read_prompt_file(data_dir("rubrics") / "prompts" / SYSTEM_PROMPT_FILES[benchmark])


def text_sha256(text: str) -> str:
    """Return the SHA-256 (hex) of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _word(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


def prompt_benchmark(task: Task) -> Benchmark:
    """Say which reference system prompt a task gets.

    The task's ``source`` decides when it names a benchmark: every loader of
    :mod:`prefjudge.scoring.tasks` sets it (``livecodebench``, ``bigcodebench``,
    ``humaneval``, ...; compared ignoring case and punctuation, so ``LiveCodeBench-v6``
    counts). Tasks with the default source ``prefjudge`` (or none) fall back on the id:
    ``LiveCodeBench/...`` (the id the loader gives) is LiveCodeBench. Everything else gets
    the BigCodeBench prompt, as every non-LiveCodeBench benchmark does in prefjudge.

    Args:
        task: The task.

    Returns:
        ``livecodebench`` or ``bigcodebench``.
    """
    source = _word(task.source or "")
    if source and source != "prefjudge":
        return "livecodebench" if source.startswith("livecodebench") else "bigcodebench"
    prefix = task.task_id.split("/", 1)[0] if "/" in task.task_id else ""
    return "livecodebench" if _word(prefix) == "livecodebench" else "bigcodebench"


@dataclass(frozen=True)
class SystemPrompt:
    """Which system message begins every request of a generation run.

    Attributes:
        mode: ``reference`` (the SWE-IF text for each task's benchmark), ``none`` (no
            system message) or ``file`` (``text``, for every task).
        text: The text of a ``file`` system prompt.
        path: Where that text was read from (shown to people; not part of any binding).
    """

    mode: Literal["reference", "none", "file"] = "reference"
    text: str | None = None
    path: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("reference", "none", "file"):
            raise ValueError(f"unknown system prompt mode {self.mode!r}")
        if (self.mode == "file") != (self.text is not None):
            raise ValueError("a system prompt has a text exactly when its mode is 'file'")

    @classmethod
    def parse(cls, value: str) -> SystemPrompt:
        """Read a ``--system-prompt`` value: ``reference``, ``none`` or a file's path.

        The two words win over files of those names (write ``./none`` for such a file). A
        file is read with :func:`read_prompt_file`, so a leading ``<!-- ... -->`` comment
        and one final newline are not sent.

        Args:
            value: The option's value.

        Returns:
            The system prompt.

        Raises:
            ValueError: When the file cannot be read or is empty.
        """
        if value in ("reference", "none"):
            return cls(value)  # type: ignore[arg-type]
        path = Path(value)
        if path.is_dir():
            raise ValueError(f"{path}: is a folder; expected reference, none or a file")
        if not path.exists():
            raise ValueError(f"{path}: no such file (expected reference, none or a file)")
        return cls("file", read_prompt_file(path), str(path))

    def for_task(self, task: Task) -> str | None:
        """Return the system message a task's requests begin with, or None for none.

        Args:
            task: The task.

        Returns:
            The text, or None.
        """
        if self.mode == "none":
            return None
        if self.mode == "file":
            return self.text
        return reference_system_prompt(prompt_benchmark(task))


#: The default: the SWE-IF reference text of each task's benchmark.
REFERENCE_SYSTEM_PROMPT = SystemPrompt("reference")


#: No system message (prefjudge's earlier behaviour).
NO_SYSTEM_PROMPT = SystemPrompt("none")


def framing_settings(
    framing: Framing, system_prompt: SystemPrompt, tasks: Iterable[Task]
) -> dict[str, Any]:
    """The run-journal settings that bind a generation output to its prompt framing.

    Empty for the earlier behaviour (``numbered`` framing, no system prompt), so outputs
    made before these settings existed resume under it; otherwise ``framing``,
    ``system_prompt`` (the mode) and ``system_prompt_sha256`` (the sorted SHA-256s of the
    system texts the tasks get, ``[]`` for none). A file system prompt is bound by its
    content, not its path.

    Args:
        framing: The single-turn framing.
        system_prompt: The system prompt.
        tasks: The run's tasks (the reference mode's texts depend on their benchmarks).

    Returns:
        Settings to add to the journal's.
    """
    texts = {system_prompt.for_task(task) for task in tasks}
    digests = sorted(text_sha256(text) for text in texts if text is not None)
    if framing == "numbered" and system_prompt.mode == "none":
        return {}
    return {"framing": framing, "system_prompt": system_prompt.mode,
            "system_prompt_sha256": digests}


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
    prompt: str,
    refs: Sequence[InstructionRef],
    taxonomy: Taxonomy | None = None,
    *,
    framing: Framing = "reference",
) -> str:
    r"""Build the single-turn prompt: the task followed by the instructions.

    ``reference`` (the SWE-IF generator's form): ``prompt`` as given (not stripped),
    ``"\n\n"``, then ``REFERENCE_HEADER_ONE + " " + text`` for one instruction, or
    :data:`REFERENCE_HEADER_MANY` followed by ``"\n1. " + text``, ``"\n2. " + text``, ...
    for several. ``numbered`` (prefjudge's earlier form): the stripped prompt, a blank
    line, :data:`SINGLE_TURN_HEADER` and one numbered line per instruction.

    Args:
        prompt: The task's original prompt.
        refs: Instructions to add (none gives the plain prompt, under both framings).
        taxonomy: Taxonomy with the templates (the bundled one by default).
        framing: ``reference`` or ``numbered``.

    Returns:
        The user message.

    Raises:
        ValueError: On an unknown framing.
    """
    if framing not in FRAMINGS:
        raise ValueError(f"unknown framing {framing!r}: expected one of {', '.join(FRAMINGS)}")
    if not refs:
        return prompt
    taxonomy = taxonomy or load_taxonomy()
    texts = [taxonomy.prompt(ref) for ref in refs]
    if framing == "numbered":
        lines = [f"{i}. {text}" for i, text in enumerate(texts, start=1)]
        return f"{prompt.rstrip()}\n\n{SINGLE_TURN_HEADER}\n" + "\n".join(lines)
    if len(texts) == 1:
        return f"{prompt}\n\n{REFERENCE_HEADER_ONE} {texts[0]}"
    numbered = "".join(f"\n{i}. {text}" for i, text in enumerate(texts, start=1))
    return f"{prompt}\n\n{REFERENCE_HEADER_MANY}{numbered}"


def multi_turn_prompts(
    prompt: str, refs: Sequence[InstructionRef], taxonomy: Taxonomy | None = None
) -> list[str]:
    """Build the user turns of the multi-turn protocol.

    Turn 1 is the prompt as given; each later turn is one instruction's multi-turn (edit)
    template alone, as in the SWE-IF reference (the same under both framings).

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
