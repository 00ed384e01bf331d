"""A trainer's launch config read as ffnlab settings (``--engine-config FILE``), by rules kept as data.

``data/engine_configs.json`` says, per format (a torchtitan TOML, a torchtune recipe YAML, an
axolotl YAML, a TRL YAML, a transformers ``TrainingArguments`` JSON), which engine runs it and,
for each key ffnlab reads, the setting it gives (the micro-batch, the sequence length, the
precision, activation checkpointing, the optimizer and its implementation, gradient accumulation,
the parallel sizes, LoRA / QLoRA), with the file each key's meaning was read from.
:func:`read_engine_config` turns a parsed file into an :class:`EngineConfig`: the settings, the
keys used (with what each set) and every other key, ignored, with why. The command line applies
the settings under its own flags (``ffnlab.cli.memory_flags.apply_engine_config``). Pure Python.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import TypedDict

from ffnlab.errors import FfnlabError
from ffnlab.validation import MAX_DIGITS, clip, number, show

DATA = "engine_configs.json"
SETTINGS = ("batch", "seq_len", "dtype", "grad_accum", "recompute", "recompute_every", "optimizer", "optimizer_impl",
            "dp", "tp", "pp", "zero", "finetune", "lora_rank", "lora_dropout", "lora_targets", "offload_activations",
            "compile_loss")
# the projections LoRA adapts, as ``targets`` rules name them, and the sets of them ffnlab prices
# (``--lora-targets``, :func:`ffnlab.sizing.finetune.parse_targets`); "all-linear": every linear
# layer but the head, as peft's and axolotl's lora_target_linear
ATTENTION_PROJECTIONS = ("q", "k", "v", "o")
FFN_PROJECTIONS = ("gate", "up", "down")
PROJECTIONS = (*ATTENTION_PROJECTIONS, *FFN_PROJECTIONS, "head")
ALL_LINEAR = "all-linear"
PRICED_TARGETS = {frozenset(ATTENTION_PROJECTIONS): "attention", frozenset({"q", "v"}): "qv",
                  frozenset(FFN_PROJECTIONS): "ffn", frozenset(ATTENTION_PROJECTIONS + FFN_PROJECTIONS): ALL_LINEAR,
                  frozenset({"q", "v", *FFN_PROJECTIONS}): "qv,ffn"}


class RuleSource(TypedDict):
    """The file a key's meaning was read from: a repository's path at a tag or commit."""

    repo: str
    path: str
    ref: str


class _KeyRule(TypedDict):
    key: str  # dotted, as :func:`_leaves` names a nested key
    source: RuleSource


class KeyRule(_KeyRule, total=False):
    """How one key of a format sets ffnlab's settings: ``sets`` the SETTINGS name its value gives
    (``kind`` "int": a whole number, with ``also`` and, above one, ``also_above_one`` beside it;
    "fraction": a number in [0, 1); "targets": LoRA's targets, each value or listed module name in
    ``targets`` giving the projections it adapts), or ``values``: the settings each written value
    gives (``match`` "contains": a value containing the key)."""

    sets: str
    kind: str  # "int", "int-or-values", "fraction" or "targets"
    note: str
    targets: dict[str, list[str]]  # kind "targets": a value or listed name -> the projections it adapts
    one_name_list_is_its_name: bool
    values: dict[str, dict[str, str | bool]]
    match: str
    also: dict[str, str]
    also_above_one: dict[str, int]


class FormatRules(TypedDict):
    """One launch-config format: the engine that runs it and the keys ffnlab reads."""

    title: str
    engine: str
    suffixes: list[str]
    keys: list[KeyRule]


class EngineConfigsFile(TypedDict):
    """data/engine_configs.json."""

    about: str
    formats: dict[str, FormatRules]


@functools.cache
def config_rules() -> EngineConfigsFile:
    """The parsed ``data/engine_configs.json``."""
    data: EngineConfigsFile = json.loads(
        resources.files("ffnlab.data").joinpath(DATA).read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True)
class EngineConfig:
    """What a launch config says, in ffnlab's terms: its format and engine, the settings (name,
    value; a later key overrides an earlier one), the keys used (key, value as written, what it
    set) and the keys ignored (key, why)."""

    fmt: str
    engine: str
    settings: tuple[tuple[str, object], ...]
    used: tuple[tuple[str, str, str], ...]
    ignored: tuple[tuple[str, str], ...]

    @property
    def title(self) -> str:
        return str(config_rules()["formats"][self.fmt]["title"])

    def setting(self, name: str) -> object:
        return dict(self.settings).get(name)


def _leaves(data: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """Every leaf of a nested mapping under its dotted key (lists are leaves). A launch config is
    the user's file: whatever its parser gave, each leaf is checked where a rule reads it. A key given
    both dotted and nested (``a.b: 1`` beside ``a: {b: 2}``) is refused as the same key twice: the
    engines read only the nested one (OmegaConf and tomllib keep ``"a.b"`` a key of its own)."""
    out: dict[str, object] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        inner = _leaves(value, dotted + ".") if isinstance(value, dict) and value else {dotted: value}
        for leaf, x in inner.items():
            if leaf in out:
                raise FfnlabError(f"--engine-config: {show(leaf)} is given twice (as a dotted key and nested); "
                                  "give it once")
            out[leaf] = x
    return out


def detect_format(data: Mapping[str, object], suffix: str) -> str:
    """Which format a parsed file is: TOML is torchtitan's, JSON transformers'; a YAML with a
    ``_component_`` is torchtune's, one with axolotl's ``base_model`` / ``micro_batch_size`` /
    ``sequence_len`` axolotl's, any other TRL's."""
    suffix = suffix.lower()
    if suffix == ".toml":
        return "torchtitan"
    if suffix == ".json":
        return "transformers"
    if suffix not in (".yaml", ".yml"):
        raise FfnlabError("--engine-config must be a .toml, .yaml, .yml or .json file, got "
                          f"{show(suffix or 'no suffix')}")
    if any(k.endswith("_component_") for k in _leaves(data)):
        return "torchtune"
    if {"base_model", "micro_batch_size", "sequence_len"} & set(data):
        return "axolotl"
    return "trl"


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _number_text(value: str, key: str, source: str, whole: bool) -> str | None:
    """The one reader of a number a launch config writes as a string (``"4"``, ``"0.05"``): the
    text, stripped, where it is a number in ASCII digits of bounded length; None where it is no
    number Python would read either (``"abc"``, ``"auto"``, ``"nan"``: a value ffnlab does not
    model, ignored and said); refused in one line naming the key and the file where it is one only
    in another script or at a length no setting needs (``"\u00b2"``, Arabic-Indic digits, 4,400
    digits): ``int`` would fail on the first and on Python's digit limit, or read another number
    than the file's reader is known to."""
    text = value.strip()
    if whole:
        if not text.isdigit():  # digits of any script (str.isdigit): a number meant, read strictly below
            return None
        if text.isascii() and len(text) <= MAX_DIGITS:
            return text
        expectation = f"a whole number in at most {MAX_DIGITS} ASCII digits"
    else:
        try:
            if not math.isfinite(float(text)):  # "nan", "inf": no number ffnlab models, ignored and said
                return None
        except (ValueError, OverflowError):
            return None
        try:
            return str(number(text, key))  # ASCII digits, bounded text and exponent
        except FfnlabError:
            expectation = "a number in ASCII digits (such as 0.05; exponents within +-30)"
    raise FfnlabError(f"{clip(source)}: {key} must be {expectation}, got {show(value)}")


def _whole(value: object, key: str, source: str) -> int | None:
    """A whole number >= 1 (an int, or a string of ASCII digits: :func:`_number_text`), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 1 else None
    if isinstance(value, str) and (text := _number_text(value, key, source, whole=True)) is not None:
        n = int(text)
        return n if n >= 1 else None
    return None


def _fraction(value: object, key: str, source: str) -> float | None:
    """A number in [0, 1) (an int, a float, or a string of one: :func:`_number_text`), else None."""
    if isinstance(value, bool):
        return None
    x: float | None = None
    if isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:  # an integer past a float's range
            return None
    elif isinstance(value, str) and (text := _number_text(value, key, source, whole=False)) is not None:
        x = float(text)
    return x if x is not None and 0 <= x < 1 else None


def _projections(rule: KeyRule, value: object) -> tuple[set[str], str]:
    """The projections a ``targets`` key's value adapts, and why not where it names something the
    rule does not know (a name outside ``targets``, a regular expression)."""
    table = rule["targets"]
    if isinstance(value, list) and len(value) == 1 and rule.get("one_name_list_is_its_name"):
        value = value[0]  # TRL's ModelConfig passes a one-name list on as that string ("all-linear")
    if isinstance(value, list):  # module names ("all-linear" only as the string, where peft reads it)
        names = [_text(v) for v in value]
        unknown = [n for n in names if n not in table or n == ALL_LINEAR]
        if unknown:
            return set(), f"module names ffnlab does not map: {clip(', '.join(unknown))} (it reads {', '.join(table)})"
    elif (text := _text(value)) in table:
        names = [text]
    else:
        return set(), (f"{show(text)} is not a list of module names ffnlab reads (a string is a regular expression "
                       "peft matches against whole module names)" if isinstance(value, str) else
                       f"value {show(value)} is not one ffnlab models")
    return {p for n in names for p in table[n]}, ""


def _priced_targets(found: set[str]) -> str | None:
    """The ``--lora-targets`` that adapts exactly ``found``, or None where no such set is priced."""
    if ALL_LINEAR in found:
        found = (found - {ALL_LINEAR}) | set(ATTENTION_PROJECTIONS + FFN_PROJECTIONS)
    return PRICED_TARGETS.get(frozenset(found))


def read_engine_config(data: Mapping[str, object], suffix: str, source: str = "launch config") -> EngineConfig:
    """The settings ``data`` (a parsed launch config whose file ends in ``suffix``) gives, by the
    rules of its format; ``source``: the file, as a refusal of one of its values names it."""
    fmt = detect_format(data, suffix)
    rules = config_rules()["formats"][fmt]
    leaves = _leaves(data)
    by_key = {r["key"]: r for r in rules["keys"]}
    settings: dict[str, object] = {}
    used: list[tuple[str, str, str]] = []
    ignored: list[tuple[str, str]] = []
    targets: dict[str, tuple[str, set[str], str]] = {}  # key -> (value as written, projections, why not)
    for key, value in leaves.items():
        rule = by_key.get(key)
        if rule is None:
            ignored.append((key, "not a memory setting ffnlab reads"))
            continue
        if value is None:
            ignored.append((key, "empty"))
            continue
        got: dict[str, object] | None = None
        kind = rule.get("kind")
        whole = _whole(value, key, source) if kind in ("int", "int-or-values") else None
        if kind == "targets":  # the file's keys together give one --lora-targets: read after the loop
            targets[key] = (clip(_text(value)), *_projections(rule, value))
            continue
        if kind == "fraction":
            got = None if (x := _fraction(value, key, source)) is None else {rule["sets"]: x}
        elif kind in ("int", "int-or-values") and whole is not None:
            got = {rule["sets"]: whole, **rule.get("also", {})}
            if whole > 1:
                got.update(rule.get("also_above_one", {}))
        elif "values" in rule:
            table = rule["values"]
            text = _text(value)
            if rule.get("match") == "contains":
                got = {**next((v for k, v in table.items() if k in text), {})}
            elif text in table:
                got = {**table[text]}
        elif "sets" in rule and kind is None:
            got = {rule["sets"]: value}
        if got is None:
            ignored.append((key, f"value {show(value)} is not one ffnlab models"))
            continue
        settings.update(got)
        what = ", ".join(f"{k} {v}" for k, v in got.items()) or "nothing more"
        used.append((key, clip(_text(value)), what))
    _read_targets(targets, settings, used, ignored)
    return EngineConfig(fmt=fmt, engine=rules["engine"], settings=tuple(settings.items()), used=tuple(used),
                        ignored=tuple(ignored))


def _read_targets(targets: dict[str, tuple[str, set[str], str]], settings: dict[str, object],
                  used: list[tuple[str, str, str]], ignored: list[tuple[str, str]]) -> None:
    """The LoRA targets a file's ``targets`` keys give together (torchtune's attention list and its
    MLP and output switches; a peft target list beside axolotl's lora_target_linear): the one
    ``--lora-targets`` that adapts exactly those projections, each key used for it; or, where a key
    names what ffnlab does not read or the set is not one ffnlab prices, the keys ignored together
    with why (one entry: the one line that says so): no nearby set is read in their place, and the
    command line's --lora-targets (default all-linear) applies."""
    if not targets:
        return
    keys = " + ".join(targets)
    unread = [f"{k}: {why}" for k, (_, _, why) in targets.items() if why]
    if unread:
        ignored.append((keys, "; ".join(unread)))
        return
    found = set().union(*(p for _, p, _ in targets.values()))
    if not found:  # switches off (lora_target_linear false, apply_lora_to_mlp false): they add no layer
        used.extend((k, text, "nothing more") for k, (text, _, _) in targets.items())
        return
    priced = _priced_targets(found)
    if priced is None:
        named = [p for p in PROJECTIONS if p in found]
        if ALL_LINEAR in found:
            named = ["every linear layer", *(p for p in named if p == "head")]
        ignored.append((keys, f"LoRA on {', '.join(named)}: not a set ffnlab prices (--lora-targets attention: "
                              "q k v o; qv: q v; ffn: gate up down; attention,ffn; qv,ffn); the default all-linear "
                              "stands unless --lora-targets is given"))
        return
    settings["lora_targets"] = priced
    used.extend((k, text, f"lora_targets {priced}") for k, (text, _, _) in targets.items())


__all__ = ["DATA", "SETTINGS", "EngineConfig", "EngineConfigsFile", "FormatRules", "KeyRule", "RuleSource",
           "config_rules", "detect_format", "read_engine_config"]
