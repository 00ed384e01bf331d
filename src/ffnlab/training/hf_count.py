"""Count a model ffnlab has no translator for by letting transformers build it on the meta device.

The training-layer half of :mod:`ffnlab.sizing.hf.fallback`: it imports torch and transformers
(once per process, however many configs are counted), builds the model on PyTorch's ``meta``
device (shapes only: no memory, no weights, nothing downloaded) and writes its module tree out
as plain data (:func:`module_tree`). Everything read from that tree (which modules are FFNs,
attention, SSM layers; widths, experts, layer layout) is pure Python in
:mod:`ffnlab.sizing.hf.structure`, so the same analysis runs on a stored tree without torch.
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import warnings
from collections.abc import Iterator
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ffnlab.errors import FfnlabError
from ffnlab.sizing.hf.fallback import (
    BASE_KIND,
    DEPTH_KEYS,
    INSTALL_HINT,
    MAX_LAYERS,
    MAX_MODULES,
    BuildLimit,
    is_layer_count,
    layer_count_candidates,
    refuse_built_modules,
    refuse_layer_count,
    refuse_module_count,
    refuse_unprobed,
)
from ffnlab.sizing.hf.structure import CountedModel, ModuleNode
from ffnlab.validation import show

# torch module classes that are activations (transformers' own live in transformers.activations)
_TORCH_ACTIVATIONS = ("ReLU", "ReLU6", "GELU", "SiLU", "Tanh", "Sigmoid", "Mish", "LeakyReLU", "ELU",
                      "Softplus", "GLU", "Hardswish", "Hardtanh", "SELU", "CELU", "PReLU", "Identity")
# words in a parameterless module's class name that make it an activation (BLOOM's BloomGelu)
_ACTIVATION_WORDS = ("gelu", "silu", "relu", "swish", "swiglu", "mish", "sigmoid", "tanh", "softplus")


@lru_cache(maxsize=1)
def _libraries() -> tuple[Any, Any]:
    """torch and transformers, imported once, transformers' own logging silenced (its warnings
    about a config would print before ffnlab's one error line)."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return torch, transformers


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No warnings, log records or prints from inside transformers while a model is built."""
    sink = io.StringIO()
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


@contextlib.contextmanager
def _modules_made_at_most(limit: int, spent: list[int] | None = None) -> Iterator[None]:
    """Count every ``torch.nn.Module`` made inside (each runs ``Module.__init__`` once, leaf or not,
    registered or not; added to ``spent[0]`` too) and stop the build with :func:`refuse_built_modules`
    at the ``limit`` + 1st: the bound on a build through transformers, whatever an estimate from small
    builds said."""
    import torch

    module_init = torch.nn.Module.__init__
    made = 0

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        if spent is not None:
            spent[0] += 1
        if made > limit:
            refuse_built_modules(limit)
        module_init(self, *args, **kwargs)

    torch.nn.Module.__init__ = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.__init__ = module_init  # type: ignore[method-assign]


def _meta_model(torch: Any, config_class: Any, auto: Any, fields: dict[str, Any], limit: int | None = None,
                spent: list[int] | None = None) -> tuple[Any, Any]:
    """transformers' config and model of config.json ``fields`` on the meta device, quietly, making at
    most ``limit`` (:data:`MAX_MODULES`) modules (:class:`BuildLimit` past it; anything transformers
    raises, as raised); the modules made are added to ``spent[0]``."""
    with _quiet():
        cfg = config_class.from_dict(copy.deepcopy(fields))
        with torch.device("meta"), _modules_made_at_most(MAX_MODULES if limit is None else limit, spent):
            return cfg, auto.from_config(cfg)


# the auto classes a count may be of, in the order they are tried, and what each one is
# (causal LM first, as the reliability issue names the reference; a type with only a sequence-to-sequence
# LM head, such as T5, is counted with that head rather than as the bare model)
AUTO_KINDS = (("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "AutoModelForCausalLM", "causal LM"),
              ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "AutoModelForSeq2SeqLM", "sequence-to-sequence LM"),
              ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "AutoModelForImageTextToText", "image-text-to-text"))

def model_class(transformers: Any, model_type: str) -> Any:
    """The Auto class that builds the model with its LM head: causal LM, else sequence-to-sequence
    LM, else image-text-to-text (vision-language models), else the bare model."""
    return auto_kind(transformers, model_type)[0]


def auto_kind(transformers: Any, model_type: str) -> tuple[Any, str]:
    """:func:`model_class` and what it is (:data:`AUTO_KINDS`, else :data:`BASE_KIND`)."""
    from transformers.models.auto import modeling_auto as m

    for names, auto, kind in AUTO_KINDS:
        if model_type in getattr(m, names):
            return getattr(transformers, auto), kind
    return transformers.AutoModel, BASE_KIND


def _has_model(model_type: str) -> bool:
    """Whether AutoModel builds ``model_type`` (sub-configs such as align_text_model have no class)."""
    from transformers.models.auto import modeling_auto as m

    return model_type in m.MODEL_MAPPING_NAMES


def _embeddings(model: Any, getter: str) -> Any:
    """The module ``model.<getter>()`` returns, or None where the class has none (it may raise
    NotImplementedError, as CLIPModel's get_input_embeddings does, or anything else)."""
    try:
        return getattr(model, getter)() if hasattr(model, getter) else None
    except Exception:  # noqa: BLE001 - a class without such a module raises instead of returning None
        return None


def _kind(torch: Any, mod: Any) -> str:
    nn = torch.nn
    name = type(mod).__name__
    module = type(mod).__module__
    own = list(mod.named_parameters(recurse=False))
    leafish = not any(True for c in mod.children() for _ in c.parameters())
    if isinstance(mod, nn.Embedding):
        return "embedding"
    if isinstance(mod, (nn.ModuleList, nn.ModuleDict, nn.Sequential)):
        return "list"
    if isinstance(mod, nn.Conv1d):
        return "conv"
    if isinstance(mod, (nn.LayerNorm, nn.GroupNorm)) or ("Norm" in name and leafish):
        return "norm"
    if module.startswith("transformers.activations") or name.endswith("Activation") or (
            module.startswith("torch.nn") and name in _TORCH_ACTIVATIONS) or (
            not own and leafish and any(a in name.lower() for a in _ACTIVATION_WORDS)):
        return "act"
    if isinstance(mod, nn.Linear) or name == "Conv1D":
        return "linear"
    if leafish and own and own[0][0] == "weight" and own[0][1].dim() == 2 and len(own) <= 2:
        return "linear"  # a leaf holding one matrix (and its bias): custom linear classes
    return "module"


def _linear_io(mod: Any) -> list[int] | None:
    w = getattr(mod, "weight", None)
    if w is None or w.dim() != 2:
        return None
    if type(mod).__name__ == "Conv1D":  # GPT-2's Conv1D stores the weight as (in, out)
        return [int(w.shape[0]), int(w.shape[1])]
    return [int(w.shape[1]), int(w.shape[0])]


def module_tree(model: Any) -> ModuleNode:
    """The model's module tree as plain data, each parameter once.

    A node: ``c`` class name; ``k`` kind (linear, conv, embedding, norm, act, list, module);
    ``p`` its own parameters not seen before, name -> shape; ``t`` names of its parameters
    that are another module's (tied); ``io`` [in, out] of a linear; ``conv`` [channels, groups,
    kernel] of a Conv1d; ``ch`` children by name; ``ref`` the path of a module object already
    written elsewhere (shared blocks such as Zamba's), whose subtree is not repeated.
    """
    torch, _ = _libraries()
    seen_modules: dict[int, str] = {}
    seen_params: set[int] = set()

    def node(mod: Any, path: str) -> ModuleNode:
        if id(mod) in seen_modules:
            return {"c": type(mod).__name__, "k": "ref", "ref": seen_modules[id(mod)]}
        seen_modules[id(mod)] = path
        out: ModuleNode = {"c": type(mod).__name__, "k": _kind(torch, mod)}
        params: dict[str, list[int]] = {}
        tied: list[str] = []
        for name, p in mod.named_parameters(recurse=False):
            if id(p) in seen_params:
                tied.append(name)
            else:
                seen_params.add(id(p))
                params[name] = [int(s) for s in p.shape]
        if params:
            out["p"] = params
        if tied:
            out["t"] = tied
        if out["k"] == "linear":
            io_ = _linear_io(mod)
            if io_:
                out["io"] = io_
        if out["k"] == "conv":
            out["conv"] = [int(mod.in_channels), int(mod.groups), int(mod.kernel_size[0])]
        kids = {n: node(c, f"{path}.{n}" if path else n) for n, c in mod.named_children()}
        if kids:
            out["ch"] = kids
        return out

    return node(model, "")


def _path_of(model: Any, target: Any) -> str | None:
    if target is None:
        return None
    for name, mod in model.named_modules():
        if mod is target:
            return name
    return None


def _config_dict(hf_cfg: Any) -> dict[str, Any]:
    """The config as transformers resolved it (defaults filled in), the text config's keys
    merged over the outer ones for a vision-language model."""
    out = hf_cfg.to_dict()
    text = hf_cfg.get_text_config() if hasattr(hf_cfg, "get_text_config") else hf_cfg
    if not hasattr(text, "to_dict"):  # a text_config key the class does not read (a plain dict)
        text = hf_cfg
    if text is not hf_cfg:
        out = {**out, **text.to_dict()}
    for key in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers"):
        if out.get(key) is None:
            with contextlib.suppress(Exception):  # attribute_map aliases (n_embd, n_head, ...)
                value = getattr(text, key)
                if isinstance(value, int) and not isinstance(value, bool):
                    out[key] = value
    return out


def _with_path(fields: dict[str, Any], changes: dict[tuple[str, ...], int]) -> dict[str, Any]:
    """A deep copy of ``fields`` with the values at ``changes``' paths replaced."""
    trial = copy.deepcopy(fields)
    for path, value in changes.items():
        target = trial
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return trial


def _built_size(torch: Any, config_class: Any, auto: Any, fields: dict[str, Any]) -> int | None:
    """How much transformers' model of ``fields`` (meta device) holds by count: its modules and
    the entries of every container its modules keep (a per-layer list, such as Bailing's regexes
    for its num_nextn_predict_layers MTP layers, grows with a layer count too); None where it refuses."""
    built = _built(torch, config_class, auto, fields)
    return None if built is None else built[0]


def _built(torch: Any, config_class: Any, auto: Any,
           fields: dict[str, Any]) -> tuple[int, dict[str, bool]] | None:
    """:func:`_built_size` and the model's module paths, each with whether its subtree holds a linear
    map (``nn.Linear`` or GPT-2's Conv1D); None where transformers refuses."""
    containers = (list, tuple, dict, set, frozenset)
    try:
        _, model = _meta_model(torch, config_class, auto, fields)
    except BuildLimit:
        raise
    except Exception:  # noqa: BLE001 - a refusal: nothing to compare
        return None
    size = sum(1 + sum(len(v) for v in vars(m).values() if isinstance(v, containers)) for m in model.modules())
    linear = {name: any(isinstance(x, torch.nn.Linear) or type(x).__name__ == "Conv1D" for x in m.modules())
              for name, m in model.named_modules()}
    return size, linear


def _new_blocks(before: dict[str, bool], after: dict[str, bool]) -> list[str]:
    """The roots of the modules ``after`` holds and ``before`` does not (each a new subtree)."""
    return [p for p in after if p not in before and (p.rsplit(".", 1)[0] if "." in p else "") in before]


# a key not named like a layer count is judged as one when the class's default for it is a count this
# small (every stack depth of transformers 5.25's config classes, Qwen2.5-VL's vision depth 32 among
# them; widths, vocabularies and positions default to more)
_COUNT_DEFAULT = 1_000
# names of an index, not a count (a token id defaults to 0, 1 or 2 and is written as 128,000)
_INDEX_ENDINGS = ("_id", "_ids", "_index", "_idx")


def _config_objects(transformers: Any, hf_cfg: Any) -> list[tuple[tuple[str, ...], Any]]:
    """The config transformers resolved and every sub-config object it holds (attributes that are
    configs, not plain dicts: a dict the class does not turn into a config is not read as one), each
    with its path, up to 4 deep."""
    base = transformers.PreTrainedConfig
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(obj: Any, path: tuple[str, ...]) -> None:
        found.append((path, obj))
        if len(path) < 4:
            for key, value in vars(obj).items():
                if isinstance(value, base):
                    walk(value, (*path, key))

    walk(hf_cfg, ())
    return found


_DEFAULTS: dict[str, Any] = {}


def _class_defaults(config_class: Any) -> Any:
    """An instance of ``config_class`` with its defaults (made once per class), or None where it
    needs arguments."""
    name = f"{config_class.__module__}.{config_class.__qualname__}"
    if name not in _DEFAULTS:
        try:
            with _quiet():
                _DEFAULTS[name] = config_class()
        except Exception:  # noqa: BLE001 - no default instance: no default to compare with
            _DEFAULTS[name] = None
    return _DEFAULTS[name]


def _held(obj: Any, key: str) -> Any:
    """The value config object ``obj`` holds under ``key`` (an attribute_map alias resolved), or None."""
    try:
        return getattr(obj, key, None)
    except Exception:  # noqa: BLE001 - a property that raises holds nothing
        return None


def _at(fields: dict[str, Any], path: tuple[str, ...]) -> Any:
    obj: Any = fields
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _count_like(transformers: Any, hf_cfg: Any, fields: dict[str, Any]) -> list[tuple[tuple[str, ...], int]]:
    """Keys of config.json above :data:`MAX_LAYERS` not named like a layer count that a config object
    transformers resolved holds as written and whose class default is a count
    (:data:`_COUNT_DEFAULT`): Qwen2.5-VL's vision_config.depth. Whether they size the model is the
    probe's to say, as for the keys named like a layer count."""
    found: list[tuple[tuple[str, ...], int]] = []
    for path, obj in _config_objects(transformers, hf_cfg):
        written = _at(fields, path)
        if not isinstance(written, dict):
            continue
        defaults = _class_defaults(type(obj))
        for key, value in written.items():
            n = value if isinstance(value, int) and not isinstance(value, bool) else None
            if (n is None or n <= MAX_LAYERS or not isinstance(key, str) or is_layer_count(key)
                    or key.endswith(_INDEX_ENDINGS)):
                continue
            default = _held(defaults, key) if defaults is not None else None
            if (_held(obj, key) == n and isinstance(default, int) and not isinstance(default, bool)
                    and 0 <= default <= _COUNT_DEFAULT):
                found.append(((*path, key), n))
    return found


def _depth(transformers: Any, hf_cfg: Any, fields: dict[str, Any]) -> int:
    """The most layers any stack of the model has, up to :data:`MAX_LAYERS`: the :data:`DEPTH_KEYS`
    of every config object transformers resolved (class defaults included: a stack left to its
    default is as deep as the default) and of config.json at any depth; 0 if none."""
    found = [0]

    def keep(value: object) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_LAYERS:
            found.append(value)

    for _, obj in _config_objects(transformers, hf_cfg):
        for key in DEPTH_KEYS:
            keep(_held(obj, key))

    def walk(obj: object, level: int) -> None:
        if isinstance(obj, dict) and level <= 4:
            for key, value in obj.items():
                if key in DEPTH_KEYS:
                    keep(value)
                walk(value, level + 1)

    walk(fields, 0)
    return max(found)


def _resolved(config_class: Any, fields: dict[str, Any],
              named: list[tuple[tuple[str, ...], int]]) -> tuple[Any, dict[tuple[str, ...], int]]:
    """The config transformers resolves from ``fields``, with each key of ``named`` (named like a
    layer count, above :data:`MAX_LAYERS`) at a stand-in just above it (a config may make a list per
    layer as it is read: a billion of them would not end), and the stand-ins by path. Where a
    stand-in is refused (a layer_types list as long as the count), the config as written (the list
    is as long as the file). Raises what transformers raises on the config as written."""
    stand_ins = {path: MAX_LAYERS + 1 + i for i, (path, _) in enumerate(named)}
    with _quiet():
        if stand_ins:
            with contextlib.suppress(Exception):
                return config_class.from_dict(_with_path(fields, stand_ins)), stand_ins
        return config_class.from_dict(copy.deepcopy(fields)), {path: n for path, n in named}


# keys whose list (or string) holds one entry per layer, and keys whose list of ints holds the depth
# of each stage (Swin, ConvNeXt, ResNet ``depths``): where transformers refuses the probe's trials of such
# a list, it is refused as layers (it cannot be told from a stack); any other list is then built as written
_PER_LAYER_LISTS = ("layer_types", "layers_block_type", "hybrid_override_pattern", "block_types")


def _is_int_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in value)


def _listed_depth(key: str, value: Any) -> int | None:
    """The layers a list-valued key would hold were it a stack: the sum of a list of ints (stage depths,
    block repeats), the length of any other list (or of a per-layer string, :data:`_PER_LAYER_LISTS`);
    None for a value that is no list."""
    if _is_int_list(value):
        return sum(x for x in value if x > 0)
    if isinstance(value, (list, tuple)) or (key in _PER_LAYER_LISTS and isinstance(value, str)):
        return len(value)
    return None


def _stack_named(key: str) -> bool:
    return key.endswith("depths") or key in _PER_LAYER_LISTS


def _listed(transformers: Any, hf_cfg: Any, fields: dict[str, Any]) -> list[tuple[tuple[str, ...], int]]:
    """The lists of config.json, held by a config object transformers resolved, that would hold more
    than :data:`MAX_LAYERS` layers were they a stack (:func:`_listed_depth`), whatever their name, with
    those layers: whether they are a stack is the probe's to say (:func:`_check_listed_depths`)."""
    found: list[tuple[tuple[str, ...], int]] = []
    for path, _ in _config_objects(transformers, hf_cfg):
        written = _at(fields, path)
        if not isinstance(written, dict):
            continue
        for key, value in written.items():
            n = _listed_depth(key, value) if isinstance(key, str) else None
            if n is not None and n > MAX_LAYERS:
                found.append(((*path, key), n))
    return found


def _list_trials(value: Any, d: int) -> tuple[Any, Any]:
    """Two small stand-ins for a listed stack, one unit apart: a list of ints with its largest entry at
    d + 1 and d + 2 and any other entry above :data:`MAX_LAYERS` at d + 1 (d the model's deepest stack:
    a stage of that many blocks is small, and an entry that is a layer index stays past the last layer,
    where transformers ignores it, as it is written), any other list (or string) cut to d + 1 and d + 2
    entries."""
    if _is_int_list(value):
        j = max(range(len(value)), key=lambda i: value[i])
        small = [d + 1 if x > MAX_LAYERS else x for x in value]
        return [*small[:j], d + 1, *small[j + 1:]], [*small[:j], d + 2, *small[j + 1:]]
    return value[: d + 1], value[: d + 2]


def _check_listed_depths(torch: Any, config_class: Any, auto: Any, fields: dict[str, Any],
                         listed: list[tuple[tuple[str, ...], int]], held: dict[tuple[str, ...], Any],
                         d: int) -> None:
    """Refuse a list that holds a stack of more than :data:`MAX_LAYERS` layers in all, judged by what
    transformers builds from it, never by its name or its presence: each list of ``listed`` is built
    at two small stand-ins one unit apart (:func:`_list_trials`; the other lists at their smaller
    stand-in, the counts of ``held`` at their trial values, so no trial is large). One that grows the
    model by new blocks is a stack (EfficientNet's ``num_block_repeats``, HGNet-V2's
    ``stage_num_blocks``, Swin's ``depths``, Nemotron-H's ``layers_block_type``) and is refused as its
    layers; one that does not (HGNet-V2's ``depths``, which its backbone does not read; RecurrentGemma's
    ``block_types``, a pattern cycled over its layers; a list of widths) is built as written. Where
    transformers refuses the trials, a list named like a stack (``*depths``, :data:`_PER_LAYER_LISTS`) is
    refused as layers, any other built as written (transformers' verdict)."""
    small = {path: _list_trials(_at(fields, path), d)[0] for path, _ in listed}
    for path, n in listed:
        one, two = _list_trials(_at(fields, path), d)
        base = _built(torch, config_class, auto, _with_path(fields, {**held, **small, path: one}))
        more = None if base is None else _built(torch, config_class, auto,
                                                _with_path(fields, {**held, **small, path: two}))
        if base is None or more is None:
            if _stack_named(path[-1]):
                refuse_layer_count(path, n)
            continue
        if more[0] > base[0] and _new_blocks(base[1], more[1]):
            refuse_layer_count(path, n)


def _low(transformers: Any, hf_cfg: Any, path: tuple[str, ...]) -> int:
    """The small value a count of other modules is first tried at: its class default (a count up to
    :data:`_COUNT_DEFAULT`), at least 1."""
    obj = dict(_config_objects(transformers, hf_cfg)).get(path[:-1])
    defaults = _class_defaults(type(obj)) if obj is not None else None
    default = _held(defaults, path[-1]) if defaults is not None else None
    return max(default, 1) if isinstance(default, int) and not isinstance(default, bool) else 1


class _EstimateSpent(Exception):
    """The build-cost estimate's small builds made :data:`_COST_MODULES` modules in all: it gives up."""


def _module_count(torch: Any, config_class: Any, auto: Any, fields: dict[str, Any],
                  spent: list[int]) -> int | None:
    """The modules transformers' model of ``fields`` holds (meta device); None where it refuses.
    :class:`_EstimateSpent` once the builds counted in ``spent`` made :data:`_COST_MODULES` modules."""
    try:
        _, model = _meta_model(torch, config_class, auto, fields, max(_COST_MODULES - spent[0], 0), spent)
    except BuildLimit:
        raise _EstimateSpent from None
    except Exception:  # noqa: BLE001 - a refusal: nothing to estimate from
        return None
    return sum(1 for _ in model.modules())


# the build-cost estimate holds every count it moves at this value and the next few (small builds)
_COST_TRIAL = 2
# the most small builds its fit may take (the grid of the counts it moves)
_COST_BUILDS = 64
# the modules the estimate's small builds may make in all (about 1 s on the meta device): past it the
# builds are not small (a list or a derived count held as written), and the estimate gives up
_COST_MODULES = 20_000
# a count written at most this is held at its written value where transformers refuses the small
# builds with it moved (heads that must divide a width): small, so every build stays small
_COST_HOLD = 16


def _cost_groups(transformers: Any, hf_cfg: Any, fields: dict[str, Any],
                 skip: set[tuple[str, ...]]) -> dict[int, list[tuple[str, ...]]]:
    """The counts of config.json a build's modules may grow with, grouped by their written value: an int
    above :data:`_COST_TRIAL` + 1 (and up to :data:`MAX_LAYERS`) held by a config object transformers
    resolved, named like a layer count or defaulted by its class to a count (:data:`_COUNT_DEFAULT`), not
    an index; and the lists (or per-layer strings) of those objects as long as one of those values (one
    entry per layer). Counts written equal move together in the trials (Switch Transformers' encoder,
    decoder and sparse layers), so a relation between them the model checks holds in every trial."""
    groups: dict[int, list[tuple[str, ...]]] = {}
    lists: list[tuple[tuple[str, ...], int]] = []
    for path, obj in _config_objects(transformers, hf_cfg):
        written = _at(fields, path)
        if not isinstance(written, dict):
            continue
        defaults = _class_defaults(type(obj))
        for key, value in written.items():
            if not isinstance(key, str) or (*path, key) in skip:
                continue
            if isinstance(value, (list, tuple)) or (key in _PER_LAYER_LISTS and isinstance(value, str)):
                lists.append(((*path, key), len(value)))
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not _COST_TRIAL + 1 < value <= MAX_LAYERS:
                continue
            if key.endswith(_INDEX_ENDINGS):
                continue
            default = _held(defaults, key) if defaults is not None else None
            if is_layer_count(key) or key in DEPTH_KEYS or (
                    _held(obj, key) == value and isinstance(default, int) and not isinstance(default, bool)
                    and 0 <= default <= _COUNT_DEFAULT):
                groups.setdefault(value, []).append((*path, key))
    for path, n in lists:
        if n in groups:
            groups[n].append(path)
    return groups


def _at_value(fields: dict[str, Any], paths: list[tuple[str, ...]], value: int) -> dict[tuple[str, ...], Any]:
    """The changes that set each count of ``paths`` to ``value`` and cut each list among them to that long."""
    out: dict[tuple[str, ...], Any] = {}
    for path in paths:
        written = _at(fields, path)
        out[path] = written[:value] if isinstance(written, (list, tuple, str)) else value
    return out


def _is_layer_key(path: tuple[str, ...]) -> bool:
    return is_layer_count(path[-1]) or path[-1] in DEPTH_KEYS


def _lagrange(nodes: list[int], x: int) -> list[Fraction]:
    """The weights that give a polynomial's value at ``x`` from its values at ``nodes`` (degree below
    their number)."""
    weights = []
    for j, xj in enumerate(nodes):
        w = Fraction(1)
        for i, xi in enumerate(nodes):
            if i != j:
                w *= Fraction(x - xi, xj - xi)
        weights.append(w)
    return weights


def _fit_points(moving: list[int], degree: dict[int, int]) -> list[dict[int, int]] | None:
    """The grid the fit is taken on: each moving group at :data:`_COST_TRIAL` up to that + its degree;
    None past :data:`_COST_BUILDS` builds."""
    points: list[dict[int, int]] = [{}]
    for n in moving:
        points = [{**p, n: _COST_TRIAL + i} for p in points for i in range(degree[n] + 1)]
        if len(points) > _COST_BUILDS:
            return None
    return points


def _check_build_cost(torch: Any, transformers: Any, config_class: Any, auto: Any, fields: dict[str, Any],
                      hf_cfg: Any, held: dict[tuple[str, ...], Any],
                      counts: list[tuple[tuple[str, ...], int]], d: int) -> int | None:
    """:func:`_estimate_build_cost`, or None where its small builds made :data:`_COST_MODULES` modules
    in all (they were not small: the build itself is bounded as it is made)."""
    try:
        return _estimate_build_cost(torch, transformers, config_class, auto, fields, hf_cfg, held, counts, d)
    except _EstimateSpent:
        return None


def _estimate_build_cost(torch: Any, transformers: Any, config_class: Any, auto: Any, fields: dict[str, Any],
                         hf_cfg: Any, held: dict[tuple[str, ...], Any],
                         counts: list[tuple[tuple[str, ...], int]], d: int) -> int | None:
    """Refuse, before anything large is built, a config whose model (or the probe's trial of it, a count of
    ``counts`` above :data:`MAX_LAYERS` at d + 1) would hold more than :data:`MAX_MODULES` modules,
    estimated from small builds alone, whatever side of :data:`MAX_LAYERS` its counts are.

    The counts a model's modules may grow with (:func:`_cost_groups`, counts written equal moved as one
    group; ``counts``; the keys of ``held`` at their small stand-ins throughout) are set to
    :data:`_COST_TRIAL` (a group written at most :data:`_COST_HOLD` is held as written where transformers
    refuses that build). A group of k counts may grow the modules as a polynomial of degree k in its value
    (Switch Transformers' layers, sparse layers and experts written 400 each: layers times experts);
    those that grow the model are built on the grid of :data:`_COST_TRIAL` to that + k (at most
    :data:`_COST_BUILDS` builds, the largest groups first; any other held), and the modules extrapolated to
    the written values by the polynomial through that grid. The fit is trusted only where it also gives
    the modules of builds it was not taken from (every group one step past its grid, alone and together):
    a model whose modules are no such polynomial (Switch's sparse layers, every (layers // sparse)-th
    layer) is not refused by the estimate, and its build is bounded as it is made
    (:func:`_modules_made_at_most`). The refusal names the count that adds the most modules, one that is
    not named like a layer count first (experts before layers), and the modules of the model as written.
    Returns that estimate of the model as written (None where nothing is estimated)."""
    big = dict(counts)
    groups = _cost_groups(transformers, hf_cfg, fields, set(held) | set(big))
    for path, n in counts:
        groups.setdefault(n, []).append(path)
    if not groups:
        return None
    t = _COST_TRIAL
    fixed: dict[tuple[str, ...], Any] = dict(held)

    made: dict[tuple[tuple[int, int], ...], int | None] = {}  # each small build once
    spent = [0]  # the modules they made in all

    def count(point: dict[int, int]) -> int | None:
        key = tuple((n, point.get(n, t)) for n in sorted(groups))
        if key not in made:
            changes = dict(fixed)
            for n, value in key:
                changes.update(_at_value(fields, groups[n], value))
            made[key] = _module_count(torch, config_class, auto, _with_path(fields, changes), spent)
        return made[key]

    base = count({})
    for n in sorted(groups):  # the small groups held as written, fewest first, until transformers builds
        if base is not None or n > _COST_HOLD:
            break
        fixed.update(_at_value(fields, groups.pop(n), n))
        made.clear()
        base = count({})
    if base is None or not groups:
        return None if base is None else base
    degree = {n: len(paths) for n, paths in groups.items()}
    # no more than the small build times each group's growth from 2 to the power of its counts (a
    # polynomial with nonnegative coefficients grows no faster): within the bound, nothing more is built
    at = {n: min(n, d + 1) if n > MAX_LAYERS else n for n in groups}
    bound = base
    for n in groups:
        for _ in range(degree[n]):
            bound = bound * at[n] // t + 1
    if bound <= MAX_MODULES:
        return None
    grow = {n: count({n: t + 1}) for n in groups}
    moving: list[int] = []
    for n in sorted((n for n, m in grow.items() if m is not None and m > base), reverse=True):
        if _fit_points([*moving, n], degree) is not None:
            moving.append(n)
    if not moving:
        return base
    points = _fit_points(moving, degree)
    assert points is not None
    values = {}
    for point in points:
        m = count(point)
        if m is None:
            return None
        values[tuple(point[n] for n in moving)] = m

    def modules(x: dict[int, int]) -> int:
        weights = [_lagrange(list(range(t, t + degree[n] + 1)), x[n]) for n in moving]
        total = Fraction(0)
        for key, m in values.items():
            w = Fraction(m)
            for i, v in enumerate(key):
                w *= weights[i][v - t]
            total += w
        return round(total)

    past = {n: t + degree[n] + 1 for n in moving}
    checks = [{**{k: t for k in moving}, n: past[n]} for n in moving] + [past]
    for point in checks:
        if count(point) != modules(point):  # no polynomial of that degree: nothing is estimated
            return None
    written = {n: n for n in moving}
    trial = {n: at[n] for n in moving}
    if modules(trial) <= MAX_MODULES:
        return modules(written)
    adds = {n: modules(trial) - modules({**trial, n: t}) for n in moving}
    worst = max(moving, key=lambda n: (any(not _is_layer_key(p) for p in groups[n]), adds[n]))
    paths = [p for p in groups[worst] if isinstance(_at(fields, p), int)]
    path = next((p for p in paths if not _is_layer_key(p)), paths[0] if paths else groups[worst][0])
    refuse_module_count(path, worst, modules(written))
    return None


def _check_layer_counts(torch: Any, transformers: Any, config_class: Any, auto: Any,
                        fields: dict[str, Any]) -> None:
    """Refuse a model of more than :data:`MAX_LAYERS` layers before building it, from the config
    transformers resolves from ``fields`` (:func:`_resolved`: class defaults filled in, aliases
    resolved, nested objects it reads turned into config objects), by what the model transformers
    builds does with each key that may be a layer count, never by the key being present alone:

    * a list that would hold more than :data:`MAX_LAYERS` layers were it a stack (the sum of a list of
      ints, the length of any other list), whatever its name: :func:`_check_listed_depths` (a list of
      layer indices, whose trials stay past the last layer, grows nothing and is built as written);
    * a key above it named like a layer count anywhere in config.json (:func:`layer_count_candidates`)
      or held by a resolved config object whose class defaults it to a count (:func:`_count_like`):
      past the model's deepest stack (d layers, :func:`_depth`) it is built at d + 1 and d + 2 (the
      other such keys at d + 1, :func:`_built`). A key that changes nothing (a threshold, an interval,
      an index, a key the reference class never reads, an encoder the causal LM does not build, a
      layer count the class defines and derives or does not build as written: ALBERT's
      num_hidden_layers over its shared groups, Swin's num_layers from its depths) is built as
      written. A key named like a layer count that grows the model is refused as layers; one that is
      not named so is a layer count when one unit of it adds one block holding a linear map
      (Qwen2.5-VL's vision_config.depth); a count of other modules (experts in every layer, codebooks,
      quantizers) is no layer count and is bounded only by the modules it builds
      (:data:`~ffnlab.sizing.hf.fallback.MAX_MODULES`, extrapolated from the two trials).
    * before any of those builds, the modules of the model as written, and of the probe's trial, are
      estimated from small builds with every count at 2 and 3 (:func:`_check_build_cost`), whatever side
      of :data:`MAX_LAYERS` the counts are: past :data:`MAX_MODULES` the config is refused as build cost.
    * where transformers refuses the trials, a key named like a layer count is refused as one ffnlab
      cannot tell from a layer count (:func:`~ffnlab.sizing.hf.fallback.refuse_unprobed`); any other
      key (a width whose heads do not divide d + 1, a vocabulary its pad id does not fit) is built as
      written, transformers' own verdict.

    Raises what transformers raises where it cannot read the config at all."""
    named = layer_count_candidates(fields)
    hf_cfg, _ = _resolved(config_class, fields, named)
    listed = _listed(transformers, hf_cfg, fields)
    counts = _count_like(transformers, hf_cfg, fields)
    found = [(p, n, True) for p, n in named] + [(p, n, False) for p, n in counts]
    d = _depth(transformers, hf_cfg, fields)
    stand_ins = {path: _COST_TRIAL for path, _ in named}
    stand_ins.update({path: _list_trials(_at(fields, path), _COST_TRIAL)[0] for path, _ in listed})
    estimate = _check_build_cost(torch, transformers, config_class, auto, fields, hf_cfg, stand_ins, counts, d)
    if not found and not listed:
        return
    at_depth = {path: d + 1 for path, _ in named}
    if listed:
        low = {path: _low(transformers, hf_cfg, path) for path, _ in counts}
        _check_listed_depths(torch, config_class, auto, fields, listed, {**at_depth, **low}, d)
    if not found:
        return
    held = {path: d + 1 for path, _, _ in found}
    base = _built(torch, config_class, auto, _with_path(fields, held))
    if base is None:  # a key transformers refuses at d + 1 (a width): the named keys alone, the rest as written
        held = {path: d + 1 for path, _, is_named in found if is_named}
        base = _built(torch, config_class, auto, _with_path(fields, held)) if held else None
    for path, n, is_named in found:
        if path not in held:  # not probed: built as written
            continue
        more = None if base is None else _built(torch, config_class, auto, _with_path(fields, {**held, path: d + 2}))
        if more is None:
            if is_named:
                refuse_unprobed(path, n, d)
            continue
        assert base is not None
        if more[0] == base[0]:
            continue
        blocks = _new_blocks(base[1], more[1])
        if is_named or (len(blocks) == 1 and more[1][blocks[0]]):
            refuse_layer_count(path, n)
        per = more[0] - base[0]
        if per > 0 and base[0] + (n - d - 1) * per > MAX_MODULES:
            # the figure: the modules of the model as written where the small builds estimated them
            refuse_module_count(path, n, estimate if estimate and estimate > MAX_MODULES else
                                base[0] + (n - d - 1) * per)


def count_with_transformers(data: dict[str, Any], supported: tuple[str, ...]) -> CountedModel:
    """Build the model of config.json ``data`` on the meta device; return its tree and facts.

    Raises :class:`ffnlab.errors.FfnlabError` with one line when transformers is missing (naming the
    ``supported`` types and the fallback) or cannot build this model type.
    """
    model_type = data.get("model_type")
    try:
        torch, transformers = _libraries()
    except ImportError:
        raise FfnlabError(f"config.json model_type {show(model_type)} is not supported; supported: "
                          f"{', '.join(supported)}; or {INSTALL_HINT}") from None
    from transformers import CONFIG_MAPPING

    if not (isinstance(model_type, str) and model_type in CONFIG_MAPPING):
        raise FfnlabError(f"config.json model_type {show(model_type)} is not supported by ffnlab (supported: "
                          f"{', '.join(supported)}) and not known to transformers {transformers.__version__}")
    auto, kind = auto_kind(transformers, model_type)
    if kind == BASE_KIND and not _has_model(model_type):
        raise FfnlabError(f"transformers {transformers.__version__} maps no model class to model_type "
                          f"{show(model_type)} (a part of another model's config): there is nothing to count")
    fields = {k: v for k, v in data.items() if k != "model_type"}
    config_class = CONFIG_MAPPING[model_type]
    try:
        _check_layer_counts(torch, transformers, config_class, auto, fields)
        hf_cfg, model = _meta_model(torch, config_class, auto, fields)
    except BuildLimit:
        raise
    except Exception as e:  # noqa: BLE001 - any failure inside transformers is the config's problem
        text = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
        first = text or type(e).__name__
        if len(first) > 300:  # an error quotes at most this much (some list every layer)
            first = first[:297] + "..."
        raise FfnlabError(f"transformers {transformers.__version__} could not build model_type "
                          f"{show(model_type)} from this config.json: {first}") from None
    inputs = _embeddings(model, "get_input_embeddings")
    outputs = _embeddings(model, "get_output_embeddings")
    return {
        "class": type(model).__name__, "auto": auto.__name__, "auto_kind": kind,
        "transformers_version": transformers.__version__,
        "tree": module_tree(model),
        "input_embeddings": _path_of(model, inputs),
        "output_embeddings": _path_of(model, outputs),
        "total": sum(p.numel() for p in model.parameters()),  # each shared tensor once
        "config": _config_dict(hf_cfg), "config_json": data,
        "sub_configs": sorted(getattr(hf_cfg, "sub_configs", {}) or {}),
    }
