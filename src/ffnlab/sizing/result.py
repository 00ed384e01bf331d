"""Results that cross a layer: frozen dataclasses, with the JSON object they stand for.

A result's fields are typed (mypy checks every producer and reader); :meth:`Result.as_dict` gives
the plain object the JSON shows, keys and order unchanged from the dicts the results replace:
nested results and dataclasses with their own ``as_dict`` (a layout adds its ``gpus``) through
theirs, other dataclasses field by field, tuples as lists, paths as strings.

One way to read a result: its attributes (``m.peak_bytes``), and ``as_dict()`` for the JSON
object. The read-only dict view of earlier releases (``m["peak_bytes"]``) is gone. A field named in
``NOT_JSON`` (Python objects ffnlab keeps for its own use, such as a sweep's arms) is an attribute
left out of ``as_dict()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any, ClassVar

from ffnlab.render import plain

__all__ = ["Result", "plain"]  # plain: the one JSON walker (ffnlab.render), for the results' readers


class Result:
    """Base of the result dataclasses: :meth:`as_dict`, the JSON object of the fields.

    The keys are the fields in their order, less those named in ``OMITTED_WHEN_NONE`` that are
    None (a key some results have and others lack); a subclass may leave out more in
    :meth:`_shown` or reorder them in :meth:`keys`.
    ``NOT_JSON`` names fields left out of the JSON object.
    ``KEY_OF_FIELD`` names the key of a field that cannot bear it (``from_model`` for ``from``, a
    Python keyword).
    """

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()
    NOT_JSON: ClassVar[frozenset[str]] = frozenset()
    KEY_OF_FIELD: ClassVar[Mapping[str, str]] = {}

    def _shown(self, name: str) -> bool:
        """Whether the field ``name`` is a key of this result."""
        return not (name in self.OMITTED_WHEN_NONE and getattr(self, name) is None)

    def keys(self) -> tuple[str, ...]:
        assert is_dataclass(self), "a Result is a dataclass"
        return tuple(self.KEY_OF_FIELD.get(f.name, f.name) for f in fields(self) if self._shown(f.name))

    def _field(self, key: str) -> Any:
        """The value of the field under ``key``."""
        return getattr(self, next((f for f, k in self.KEY_OF_FIELD.items() if k == key), key))

    def as_dict(self) -> dict[str, Any]:
        """The JSON object: each key's value as plain data."""
        return {k: plain(self._field(k)) for k in self.keys() if k not in self.NOT_JSON}
