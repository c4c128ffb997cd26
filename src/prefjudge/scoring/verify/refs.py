"""Instruction references checked against the taxonomy, once per distinct reference.

A generations file repeats the same few hundred references over thousands of lines;
:class:`ReferenceCheck` asks :meth:`~prefjudge.scoring.taxonomy.Taxonomy.check_params`
once per distinct reference (id and parameters, values told apart by their types, so that
``1``, ``1.0`` and ``True`` are never taken for one another) and gives each line its
problems and its references with the parameters resolved. Reading a file for ``score``
(:func:`prefjudge.scoring.score.prepare_job`) and reading it ahead in the verification
process (:mod:`prefjudge.scoring.verify.prefetch`) resolve references this one way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from prefjudge.io import InputIssue
from prefjudge.records import Generation, InstructionRef

if TYPE_CHECKING:
    from prefjudge.scoring.taxonomy import Taxonomy

Checked = tuple[list[tuple[str, str]], dict[str, Any], bool]
"""A reference's problems (field, message), resolved parameters, and whether those are the
parameters as given (same values, same order)."""


class ReferenceCheck:
    """``check_params`` of each distinct reference, remembered.

    Args:
        taxonomy: The instruction taxonomy (None when no generation has instructions).
    """

    def __init__(self, taxonomy: Taxonomy | None) -> None:
        self.taxonomy = taxonomy
        self._seen: dict[tuple, Checked] = {}

    def check(self, ident: str, params: Mapping[str, Any]) -> Checked:
        """Check one reference (remembered when its values are hashable).

        Args:
            ident: The instruction id.
            params: The parameters given.

        Returns:
            Its problems, resolved parameters (not to be changed: shared), and whether
            those are the parameters as given.
        """
        key: tuple | None = (ident, tuple((k, type(v), v) for k, v in params.items()))
        try:
            if key in self._seen:
                return self._seen[key]
        except TypeError:  # a list among the values: checked each time
            key = None
        assert self.taxonomy is not None  # loaded when any generation has instructions
        checked = self.taxonomy.check_params(ident, params)
        same = checked.params == params and list(checked.params) == list(params)
        found = (list(checked.problems), checked.params, same)
        if key is not None:
            self._seen[key] = found
        return found

    def instructions(
        self, path: str, line: int, gen: Generation
    ) -> tuple[list[InputIssue], list[InstructionRef]]:
        """A generation's instruction problems, and its references with resolved parameters.

        Args:
            path: The file (named in the issues).
            line: The generation's line.
            gen: The generation.

        Returns:
            ``(issues, refs)``: ``refs`` is meaningful only when ``issues`` is empty; a
            reference complete as given is itself, others are built with their resolved
            parameters (a dict of their own).
        """
        issues, refs = [], []
        for index, ref in enumerate(gen.instructions):
            problems, params, same = self.check(ref.id, ref.params)
            for fld, message in problems:
                suffix = f".{fld}" if fld else ""
                issues.append(InputIssue(path, line, f"instructions.{index}{suffix}", message))
            if same:
                refs.append(ref)  # complete as given
            else:  # validated already: constructed without validating again
                refs.append(InstructionRef.model_construct(id=ref.id, params=dict(params)))
        return issues, refs
