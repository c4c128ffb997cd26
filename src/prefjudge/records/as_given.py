"""Records written back as they were read: the keys, and their order, of the input."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)


class _KeyOrder(tuple[str, ...]):
    """The keys of a record's input, in order: how it is written back, not part of its value.

    Every two key orders compare equal, so records read from differently ordered inputs
    (or built in code) that hold the same values are still equal.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _KeyOrder)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = tuple.__hash__


class _AsGiven(BaseModel):
    """Base of user-data records that are written back with the keys and order they came with.

    Two class settings say how a record is written (both empty: the usual pydantic dump):

    * ``_INPUT_ORDERED``: fields that follow the other fields, mixed with the unknown
      (extra) keys in the order the input gave them, as untyped extras would be;
    * ``_WRITTEN_WHEN_GIVEN``: fields written only when they were given (in the input or
      to the constructor), so that a default never adds a key the input did not have.
    """

    _INPUT_ORDERED: ClassVar[frozenset[str]] = frozenset()
    _WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = frozenset()
    _key_order: _KeyOrder = PrivateAttr(default_factory=_KeyOrder)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        record = handler(data)
        if isinstance(data, dict) and isinstance(record, _AsGiven):
            record._key_order = _KeyOrder(data)
        return record

    @model_serializer(mode="wrap")
    def _write_as_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict) or not (self._INPUT_ORDERED or self._WRITTEN_WHEN_GIVEN):
            return data
        for name in self._WRITTEN_WHEN_GIVEN - self.model_fields_set:
            data.pop(name, None)
        tail = self._INPUT_ORDERED | (self.__pydantic_extra__ or {}).keys()
        if not tail.intersection(data):
            return data
        ordered = {key: data[key] for key in data if key not in tail}
        for key in (*self._key_order, *data):
            if key in tail and key in data and key not in ordered:
                ordered[key] = data[key]
        return ordered
