"""The VeriCode taxonomy: ``rubrics/vericode.yaml`` loaded into validated InstructionSpecs.

The taxonomy is data. This module loads it (cached), checks that it is coherent (including
each instruction's ``applies_when``, the :mod:`.applicability` predicates that say which
tasks it fits), looks instructions up, validates and resolves the parameters a generation
gives, repairs invalid ones for the augment stage, and fills the prompt templates.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import ValidationError

from prefjudge.io import InputError, read_text
from prefjudge.paths import data_dir
from prefjudge.records import InstructionRef, InstructionSpec, ParamSpec, VerifierSpec
from prefjudge.scoring.applicability import ALWAYS, PREDICATES, unknown_predicates
from prefjudge.scoring.profiles import DEFAULT_PROFILE, PROFILES

EXPECTED_COUNT = 30
CATEGORIES = ("style", "logic", "documentation", "error_handling", "library")
_SELECTOR = re.compile(r"^[A-Z]+[0-9]*$")
_PLACEHOLDER_VALUE = re.compile(r"^\{(\w+)\}$")
ID_PREFIX = {
    "style": "style",
    "logic": "logic",
    "documentation": "doc",
    "error_handling": "error",
    "library": "library",
}


class TaxonomyError(ValueError):
    """The taxonomy file is malformed or incoherent."""


class UnknownInstructionError(KeyError):
    """An instruction id that the taxonomy does not define."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown instruction"


class ParamProblem(NamedTuple):
    """One problem with an instruction reference.

    Attributes:
        field: Field path relative to the instruction reference (``id`` or
            ``params.<name>``).
        message: What is wrong.
    """

    field: str
    message: str


class ParamRepair(NamedTuple):
    """One change made by :meth:`Taxonomy.repair`.

    Attributes:
        field: Field path relative to the instruction reference (``params.<name>``).
        message: What was wrong.
        action: What was done (``removed`` or ``reverted to default <value>``).
    """

    field: str
    message: str
    action: str


@dataclass(frozen=True)
class ResolvedParams:
    """Parameters with defaults filled in, and any problems found on the way.

    Attributes:
        params: The given valid values plus defaults for every missing parameter (invalid
            values are replaced by their default).
        problems: Unknown id, unknown keys, wrong types, values out of range.
    """

    params: dict[str, Any]
    problems: list[ParamProblem]

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


class Taxonomy:
    """A validated set of instructions, looked up by id."""

    def __init__(
        self,
        specs: list[InstructionSpec],
        source: str = "<memory>",
        applies_when: Mapping[str, Sequence[str]] | None = None,
    ):
        """Build a taxonomy, validating it.

        Args:
            specs: The instructions, in display order.
            source: Where they came from, for error messages.
            applies_when: Instruction id to its applicability predicate names (see
                :mod:`.applicability`); every instruction needs one. None builds a taxonomy
                without applicability (enough for verifying; :meth:`applies_when` raises).

        Raises:
            TaxonomyError: When the instructions or their applicability are incoherent.
        """
        self.source = source
        problems = taxonomy_problems(specs)
        if applies_when is not None:
            problems += applicability_problems(specs, applies_when)
        if problems:
            shown = "\n".join(f"  {p}" for p in problems)
            raise TaxonomyError(f"invalid taxonomy {source}:\n{shown}")
        self._specs = {spec.id: spec for spec in specs}
        # per instruction: parameter aliases to names, and the names (checked per reference)
        self._aliases = {
            spec.id: {alias: p.name for p in spec.params for alias in p.aliases}
            for spec in specs
        }
        self._names = {spec.id: frozenset(p.name for p in spec.params) for spec in specs}
        self._applies_when = (
            None if applies_when is None else {i: tuple(applies_when[i]) for i in self._specs}
        )

    def __iter__(self) -> Iterator[InstructionSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, instruction_id: object) -> bool:
        return instruction_id in self._specs

    @property
    def ids(self) -> list[str]:
        """Instruction ids in display order."""
        return list(self._specs)

    def get(self, instruction_id: str) -> InstructionSpec:
        """Return the instruction with this id.

        Raises:
            UnknownInstructionError: When no instruction has this id.
        """
        try:
            return self._specs[instruction_id]
        except KeyError:
            raise UnknownInstructionError(f"unknown instruction id {instruction_id!r}") from None

    def applies_when(self, instruction_id: str) -> tuple[str, ...]:
        """The applicability predicate names of an instruction (any of them must hold).

        Raises:
            UnknownInstructionError: When no instruction has this id.
            TaxonomyError: When the taxonomy was built without applicability.
        """
        self.get(instruction_id)
        if self._applies_when is None:
            raise TaxonomyError(
                f"taxonomy {self.source} states no applicability (applies_when) "
                f"for {instruction_id}"
            )
        return self._applies_when[instruction_id]

    def by_category(self, category: str | None = None) -> dict[str, list[InstructionSpec]]:
        """Instructions grouped by category, in taxonomy order.

        Args:
            category: Keep only this category (None keeps all).

        Returns:
            Category name to its instructions.
        """
        groups: dict[str, list[InstructionSpec]] = {}
        for spec in self:
            if category is None or spec.category == category:
                groups.setdefault(spec.category, []).append(spec)
        return groups

    def check_params(
        self,
        instruction_id: str,
        params: Mapping[str, Any] | None = None,
        *,
        augmentation: bool = False,
    ) -> ResolvedParams:
        """Validate parameters and fill in defaults.

        Args:
            instruction_id: The instruction.
            params: Parameters given by the generation (may be partial or None); aliases
                are renamed to the parameter names.
            augmentation: Hold int values to ``min``..``max`` (what augmentation may
                choose) instead of ``valid_min``..``valid_max`` (what may be verified).

        Returns:
            The resolved parameters and the problems found, each with its field.
        """
        if instruction_id not in self._specs:
            return ResolvedParams(
                {}, [ParamProblem("id", f"unknown instruction id {instruction_id!r}")]
            )
        spec = self._specs[instruction_id]
        given, problems = _canonical_names(self._aliases[instruction_id], dict(params or {}))
        names = self._names[instruction_id]
        problems += [
            ParamProblem(f"params.{key}", _unknown_key_message(spec, key))
            for key in given
            if key not in names
        ]
        resolved: dict[str, Any] = {}
        for param in spec.params:
            if param.name not in given:
                resolved[param.name] = param.default
                continue
            message = param_value_problem(param, given[param.name], augmentation=augmentation)
            if message:
                problems.append(ParamProblem(f"params.{param.name}", message))
                resolved[param.name] = param.default
            else:
                resolved[param.name] = given[param.name]
        return ResolvedParams(resolved, problems)

    def problems(self, ref: InstructionRef) -> list[ParamProblem]:
        """Everything wrong with an instruction reference (empty when it is valid)."""
        return self.check_params(ref.id, ref.params).problems

    def resolve(self, ref: InstructionRef) -> dict[str, Any]:
        """Resolved parameters (defaults filled) of a valid instruction reference.

        Raises:
            ValueError: When the reference has problems (see :meth:`problems`).
        """
        result = self.check_params(ref.id, ref.params)
        if result.problems:
            raise ValueError("; ".join(f"{p.field}: {p.message}" for p in result.problems))
        return result.params

    def repair(self, ref: InstructionRef) -> tuple[InstructionRef, list[ParamRepair]]:
        """Make an instruction reference valid: drop unknown keys, reset invalid values.

        Used by augmentation, so int values outside ``min``..``max`` are reset too.

        Args:
            ref: A reference with a known id (parameters may be anything).

        Returns:
            The repaired reference (every parameter present) and one record per repair.

        Raises:
            UnknownInstructionError: When the id is unknown (that cannot be repaired).
        """
        spec = self.get(ref.id)
        result = self.check_params(ref.id, ref.params, augmentation=True)
        repairs = []
        for problem in result.problems:
            key = problem.field.removeprefix("params.")
            if key in {p.name for p in spec.params}:
                action = f"reverted to default {result.params[key]!r}"
            else:
                action = "removed"
            repairs.append(ParamRepair(problem.field, problem.message, action))
        return InstructionRef(id=ref.id, params=result.params), repairs

    def prompt(self, ref: InstructionRef, *, multi_turn: bool = False) -> str:
        """The instruction's prompt text with its (resolved) parameters filled in.

        Args:
            ref: A valid instruction reference.
            multi_turn: Use the follow-up ("Now modify the code so that ...") template.

        Returns:
            The prompt sentence(s).
        """
        spec = self.get(ref.id)
        template = spec.prompt_multi if multi_turn else spec.prompt_single
        return template.format(**self.resolve(ref))


def _canonical_names(
    aliases: dict[str, str], given: dict[str, Any]
) -> tuple[dict[str, Any], list[ParamProblem]]:
    """``given`` with parameter aliases (SWE-IF's or older names) renamed to the names.

    Args:
        aliases: Alias to parameter name, for one instruction.
        given: The parameters as given.
    """
    if not aliases or not aliases.keys() & given.keys():
        return given, []
    renamed: dict[str, Any] = {}
    problems = []
    for key, value in given.items():
        name = aliases.get(key, key)
        if name in renamed:
            problems.append(ParamProblem(
                f"params.{key}", f"{key!r} and {name!r} name the same parameter; give one"
            ))
            continue
        renamed[name] = value
    return renamed, problems


def valid_range(param: ParamSpec) -> tuple[int | None, int | None]:
    """The values a generation may ask for: ``valid_min``/``valid_max``, else ``min``/``max``."""
    low = param.min if param.valid_min is None else param.valid_min
    high = param.max if param.valid_max is None else param.valid_max
    return low, high


def param_value_problem(param: ParamSpec, value: Any, *, augmentation: bool = False) -> str | None:
    """Why a value is not allowed for a parameter (None when it is allowed).

    Args:
        param: The parameter.
        value: The value given.
        augmentation: Hold int values to ``min``..``max`` rather than the valid range.
    """
    if param.type == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected an integer, got {type(value).__name__} {value!r}"
        low, high = (param.min, param.max) if augmentation else valid_range(param)
        if not (low is None or low <= value) or not (high is None or value <= high):
            return f"{value} is outside the allowed range {low}–{high}"
        return None
    choices = param.choices or []
    if not isinstance(value, str):
        return f"expected one of {choices}, got {type(value).__name__} {value!r}"
    if value not in choices:
        return f"{value!r} is not one of {choices}"
    return None


def _unknown_key_message(spec: InstructionSpec, key: str) -> str:
    known = [p.name for p in spec.params]
    return f"unknown parameter {key!r} for {spec.id} (known: {known or 'none'})"


def template_fields(template: str) -> set[str]:
    """Names of the ``{placeholders}`` in a format template."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def taxonomy_problems(specs: list[InstructionSpec]) -> list[str]:
    """Everything incoherent about a list of instructions (empty when all is well).

    Checks: exactly 30 instructions, unique ids of the form ``<category prefix>_<n>``
    (:data:`ID_PREFIX`), conflicts symmetric and known, template placeholders equal to the
    parameter names, parameter defaults and recommended values allowed, Ruff selectors well
    formed, settings placeholders naming parameters.
    """
    problems = []
    if len(specs) != EXPECTED_COUNT:
        problems.append(f"expected {EXPECTED_COUNT} instructions, found {len(specs)}")
    ids = [spec.id for spec in specs]
    problems += [f"duplicate id {i!r}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    by_id = {spec.id: spec for spec in specs}
    for spec in specs:
        problems += [f"{spec.id}: {p}" for p in _spec_problems(spec, by_id)]
    return problems


def applicability_problems(
    specs: list[InstructionSpec], applies_when: Mapping[str, Sequence[str]]
) -> list[str]:
    """Everything wrong with the instructions' applicability (empty when all is well).

    Checks both directions: every instruction states at least one predicate, every name is a
    known predicate (:data:`~prefjudge.scoring.applicability.PREDICATES`), ``always`` stands
    alone, and every id given applicability is an instruction of the taxonomy.

    Args:
        specs: The instructions.
        applies_when: Instruction id to its predicate names.

    Returns:
        One line per problem, each starting with the instruction id.
    """
    problems = []
    ids = {spec.id for spec in specs}
    known = ", ".join(PREDICATES)
    for spec in specs:
        names = applies_when.get(spec.id)
        if names is None:
            problems.append(f"{spec.id}: no applies_when (name a predicate, or {ALWAYS!r})")
            continue
        if not names:
            problems.append(f"{spec.id}: applies_when names no predicate (use {ALWAYS!r})")
        problems += [
            f"{spec.id}: applies_when names unknown predicate {name!r} (known: {known})"
            for name in unknown_predicates(names)
        ]
        if ALWAYS in names and len(names) > 1:
            problems.append(f"{spec.id}: applies_when combines {ALWAYS!r} with other predicates")
        if len(set(names)) != len(names):
            problems.append(f"{spec.id}: applies_when repeats a predicate")
    problems += [
        f"applies_when given for unknown instruction id {other!r}"
        for other in applies_when
        if other not in ids
    ]
    return problems


def _spec_problems(spec: InstructionSpec, by_id: dict[str, InstructionSpec]) -> list[str]:
    problems = []
    prefix = ID_PREFIX.get(spec.category)
    if prefix is None:
        problems.append(f"unknown category {spec.category!r}")
    elif not re.fullmatch(rf"{prefix}_[1-9][0-9]*", spec.id):
        problems.append(f"id must be {prefix}_<number> for category {spec.category}")
    names = [p.name for p in spec.params]
    if len(set(names)) != len(names):
        problems.append("duplicate parameter names")
    for field in ("prompt_single", "prompt_multi"):
        try:
            used = template_fields(getattr(spec, field))
        except ValueError as exc:
            problems.append(f"{field} is not a valid template ({exc})")
            continue
        if used != set(names):
            problems.append(f"{field} placeholders {sorted(used)} != parameters {sorted(names)}")
    for param in spec.params:
        problems += [f"parameter {param.name}: {p}" for p in _param_problems(param)]
    for other in spec.conflicts:
        if other not in by_id:
            problems.append(f"conflicts with unknown id {other!r}")
        elif spec.id not in by_id[other].conflicts:
            problems.append(f"conflict with {other} is not symmetric")
        if other == spec.id:
            problems.append("conflicts with itself")
    problems += _verifier_problems(spec, set(names))
    return problems


def _param_problems(param: ParamSpec) -> list[str]:
    problems = []
    if param.type == "int":
        if param.min is None or param.max is None or param.min > param.max:
            problems.append("int parameters need min <= max")
        low, high = valid_range(param)
        if None not in (param.min, param.max, low, high) and not (
            low <= param.min and param.max <= high  # type: ignore[operator]
        ):
            problems.append("valid_min..valid_max must contain min..max")
    elif param.valid_min is not None or param.valid_max is not None:
        problems.append("valid_min/valid_max apply to int parameters only")
    elif not param.choices:
        problems.append("choice parameters need choices")
    for label, value in [("default", param.default)] + [
        ("recommended", value) for value in param.recommended
    ]:
        message = param_value_problem(param, value, augmentation=True)
        if message:
            problems.append(f"{label}: {message}")
    return problems


def _verifier_problems(spec: InstructionSpec, names: set[str]) -> list[str]:
    verifier = spec.verifier
    problems = []
    if verifier.kind == "ruff" and not verifier.select:
        problems.append("ruff verifier selects no rules")
    if verifier.kind == "python" and not verifier.check:
        problems.append("python verifier names no check")
    if verifier.scope == "response" and verifier.kind != "python":
        problems.append("only python checks can look at the whole response")
    problems += [
        f"malformed Ruff selector {s!r}" for s in verifier.select if not _SELECTOR.match(s)
    ]
    for key, value in verifier.settings.items():
        match = _PLACEHOLDER_VALUE.match(value) if isinstance(value, str) else None
        if match and match.group(1) not in names:
            problems.append(f"setting {key} uses unknown parameter {match.group(1)!r}")
    for profile in verifier.profiles:
        if profile not in PROFILES or profile == DEFAULT_PROFILE:
            others = sorted(set(PROFILES) - {DEFAULT_PROFILE})
            problems.append(f"verifier profiles: {profile!r} is not one of {others}")
            continue
        try:
            variant = verifier.for_profile(profile)
        except ValidationError as exc:
            problems.append(f"verifier profiles.{profile}: {exc.errors()[0]['msg']}")
            continue
        if variant.profiles:
            problems.append(f"verifier profiles.{profile} may not hold profiles")
        else:
            problems += [
                f"profiles.{profile}: {p}" for p in _verifier_problems(
                    spec.model_copy(update={"verifier": variant}), names
                )
            ]
    return problems


def resolve_settings(
    spec: InstructionSpec, params: Mapping[str, Any], verifier: VerifierSpec | None = None
) -> dict[str, Any]:
    """The verifier's Ruff settings with ``"{param}"`` values replaced by parameter values.

    Args:
        spec: The instruction.
        params: Resolved parameters.
        verifier: The verifier of the profile in use (``spec.verifier`` by default).

    Returns:
        TOML dotted key to typed value.
    """
    settings = {}
    for key, value in (verifier or spec.verifier).settings.items():
        match = _PLACEHOLDER_VALUE.match(value) if isinstance(value, str) else None
        settings[key] = params[match.group(1)] if match else value
    return settings


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load and validate a taxonomy file (the bundled ``rubrics/vericode.yaml`` by default).

    Results are cached per path.

    Args:
        path: YAML file with a top-level ``instructions`` list; each entry names its
            applicability predicates in ``applies_when`` (a name or a list of names).

    Returns:
        The validated taxonomy.

    Raises:
        TaxonomyError: When the file is malformed or incoherent.
    """
    resolved = Path(path) if path is not None else data_dir("rubrics") / "vericode.yaml"
    return _load_cached(str(resolved.resolve()))


@lru_cache(maxsize=8)
def _load_cached(path: str) -> Taxonomy:
    try:
        data = yaml.load(read_text(path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except InputError as exc:
        raise TaxonomyError("; ".join(str(issue) for issue in exc.issues)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise TaxonomyError(f"{path}{where}: not valid YAML ({exc})") from exc
    except RecursionError:
        raise TaxonomyError(f"{path}: not valid YAML (nested too deeply)") from None
    entries = data.get("instructions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise TaxonomyError(f"{path}: expected a top-level 'instructions' list")
    specs = []
    applies_when: dict[str, list[str]] = {}
    for index, entry in enumerate(entries):
        label = entry.get("id", f"#{index}") if isinstance(entry, dict) else f"#{index}"
        fields = dict(entry) if isinstance(entry, dict) else entry
        names = fields.pop("applies_when", None) if isinstance(fields, dict) else None
        try:
            spec = InstructionSpec.model_validate(fields)
        except ValidationError as exc:
            raise TaxonomyError(f"{path}: instruction {label}: {exc}") from exc
        specs.append(spec)
        if names is None:
            continue
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TaxonomyError(
                f"{path}: instruction {label}: applies_when must be a predicate name or a "
                f"list of names, got {names!r}"
            )
        applies_when[spec.id] = names
    return Taxonomy(specs, source=path, applies_when=applies_when)


def get(instruction_id: str) -> InstructionSpec:
    """The bundled taxonomy's instruction with this id.

    Raises:
        UnknownInstructionError: When no instruction has this id.
    """
    return load_taxonomy().get(instruction_id)


def check_params(instruction_id: str, params: Mapping[str, Any] | None = None) -> ResolvedParams:
    """Validate and resolve parameters against the bundled taxonomy.

    See :meth:`Taxonomy.check_params`.
    """
    return load_taxonomy().check_params(instruction_id, params)
