"""The type of JSON data: what ``json.loads`` returns and ``json.dumps`` writes.

A precise union (no ``Any``): a reader narrows it with ``isinstance`` before use. The records
of ffnlab's own data files (``ffnlab/data/*.json``) have TypedDicts beside their readers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Union

JsonScalar = Union[str, int, float, bool, None]
JsonValue = Union[JsonScalar, Sequence["JsonValue"], Mapping[str, "JsonValue"]]
JsonObject = Mapping[str, JsonValue]  # a JSON object (read only)
