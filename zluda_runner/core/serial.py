"""JSON round-tripping for the plain dataclasses that stages exchange.

``JsonMixin`` gives a dataclass ``to_dict``/``from_dict`` and ``to_json``/``from_json``.
Nested dataclasses, lists, tuples, dicts (``Mapping`` fields are read as dicts), ``Path``, ``Enum``
and ``X | None`` fields are handled from the type hints, so stages can be run and tested apart.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import json
import sys
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="JsonMixin")
D = TypeVar("D", bound="DataclassInstance")


_PLAIN = frozenset((str, int, float, bool))


def to_plain(value: object) -> Any:
    """Turn dataclasses, enums, paths and containers into JSON-ready values."""
    if value is None or type(value) in _PLAIN:  # most values: nothing to turn
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if isinstance(value, JsonMixin) and type(value).to_dict is not JsonMixin.to_dict:
            return value.to_dict()  # a record that adds computed fields (a verdict, a state)
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [to_plain(v) for v in value]
        return sorted(items) if isinstance(value, set | frozenset) else items
    return value


def _from_plain(tp: object, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _from_plain(non_none[0], value)
        for candidate in non_none:
            try:
                return _from_plain(candidate, value)
            except (TypeError, ValueError, KeyError):
                continue
        return value
    if origin in (list, typing.List):  # noqa: UP006
        return [_from_plain(args[0] if args else Any, v) for v in value]
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_plain(args[0], v) for v in value)
        return tuple(_from_plain(a, v) for a, v in zip(args, value, strict=False))
    if origin in (set, frozenset):
        return origin(_from_plain(args[0] if args else Any, v) for v in value)
    if origin in (dict, typing.Dict, collections.abc.Mapping):  # noqa: UP006
        kt, vt = args if args else (Any, Any)
        return {_from_plain(kt, k): _from_plain(vt, v) for k, v in value.items()}
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return _dataclass_from_dict(tp, value)
        if issubclass(tp, enum.Enum):
            return tp(value)
        if issubclass(tp, Path):
            return Path(value)
    return value


def _dataclass_from_dict(cls: type[D], data: dict[str, Any]) -> D:
    if not isinstance(data, dict):
        raise TypeError(f"expected an object for {cls.__name__}, got {type(data).__name__}")
    kwargs = {name: _from_plain(tp, data[name]) for name, tp in _field_types(cls) if name in data}
    return cls(**kwargs)


@functools.cache
def _field_types(cls: type) -> tuple[tuple[str, object], ...]:
    """A dataclass's fields and their types, worked out once per class (``get_type_hints`` evaluates every
    annotation: a cached plan's hundred bindings would evaluate Binding's a hundred times)."""
    try:
        hints = typing.get_type_hints(cls)
    except NameError:  # a field's type imported for the type checker only (its module imported on first use)
        from zluda_runner.core.argcheck import type_checking_names

        hints = typing.get_type_hints(cls, localns=type_checking_names(vars(sys.modules[cls.__module__])))
    return tuple((f.name, hints.get(f.name, Any)) for f in dataclasses.fields(cls))


class JsonMixin:
    """Mixin for dataclasses: stable JSON in and out."""

    if TYPE_CHECKING:  # what @dataclass gives every subclass (typeshed's DataclassInstance protocol)
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: to_plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        return _dataclass_from_dict(cls, data)

    @classmethod
    def from_json(cls: type[T], text: str) -> T:
        return cls.from_dict(json.loads(text))
