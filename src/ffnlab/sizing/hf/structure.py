"""Find the FFNs, attention and recurrent layers of a model from the shapes of its module tree.

The tree is plain data written by :func:`ffnlab.training.hf_count.module_tree` from a model
transformers built on the meta device. Recognition goes by structure, not parameter names:

* **dense FFN**: a module (or, as in BERT's ``intermediate``/``output`` and OPT's ``fc1``/``fc2``,
  the loose matrices of one layer) whose matrices are one projection up ``d -> f`` and one down
  ``f -> d`` with an activation between (plain), or two ups of width ``f`` or one fused ``d -> 2f``
  (gated, three matrices); a module whose class says FFN/MLP may hold extra gates (RWKV);
* **MoE**: a module with an experts child (3-D tensors with a leading expert dimension, or a list
  of identical FFNs) and a router (a ``d -> E`` matrix); any FFN beside them is a shared expert;
* **recurrent mixers**: a module with a depthwise ``Conv1d`` child is an SSM (Mamba), a linear
  attention (delta rule, RG-LRU: class names say which) or a short convolution (no recurrent
  parameter); without a convolution, class names mark lightning attention, RWKV and xLSTM;
* **attention**: a module whose class is an attention (not a decoder layer).

Everything else is embedding (embedding tables and the LM head), norms, or other. Pure Python.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, TypedDict

MIXERS = ("attention", "linear_attention", "ssm", "short_conv")
PARTS = ("embedding", "attention", "linear_attention", "ssm", "short_conv", "ffn", "norms", "other")
# class-name words (lower case) that say what a module is, where its structure alone cannot
_LINEAR_WORDS = ("delta", "lru", "recurrent", "linear", "gla", "retention", "hgrn")
_NO_CONV_LINEAR_WORDS = ("lightning", "rwkv", "lstm", "retention", "hgrn")
_ATTENTION_WORDS = ("attention", "attn", "mla")
_FFN_WORDS = ("mlp", "feedforward", "feed_forward", "ffn", "expert")
_CONTAINER_ENDINGS = ("decoderlayer", "encoderlayer", "block", "model", "forcausallm", "decoder", "encoder",
                      "stack", "hybridlayer")


@dataclass(frozen=True)
class FFNUnit:
    """One FFN found in the tree: dense, or a mixture of experts (``d_ff`` = one routed expert)."""

    path: str
    layer: int | None  # index in the layer stack; None outside it
    moe: bool
    d_ff: int
    gated: bool
    activation: str | None  # class name of the activation module (None: applied as a function)
    bias: bool
    params: int  # every parameter of the unit (router, experts, shared experts and gates)
    n_experts: int = 0
    router: int = 0
    routed: int = 0  # all routed experts
    shared: int = 0  # shared experts and their gate
    n_shared: int = 0  # shared FFN modules found
    d_shared: int | None = None
    zero_slots: int = 0  # expert slots allocated beyond the experts that compute (LongCat)
    zero_params: int = 0  # parameters transformers allocates for those slots
    reused: bool = False  # a module object already counted at an earlier layer (Zamba's shared block)


@dataclass(frozen=True)
class MixerUnit:
    """One token mixer: attention, linear attention, SSM or short convolution."""

    path: str
    layer: int | None
    kind: str  # one of MIXERS
    cls: str
    params: int
    conv_state: int = 0  # elements of the convolution state kept per sequence
    heads: int | None = None  # recurrent heads (the leading size of a 1-D or 4-D A parameter)
    inner: int | None = None  # width read by the output projection
    state_2d: int | None = None  # elements of a 2-D recurrent parameter A (Mamba 1: d_inner x N)
    reused: bool = False


@dataclass(frozen=True)
class ConfigFacts:
    """Numbers read from the config transformers resolved, which the module tree cannot show:
    top-k, the activation, zero-computation experts, the recurrent state width, the vocabulary,
    and the attention's heads and key/value cache per token (JSON-ready with :meth:`as_dict`)."""

    top_k: int | None = None
    activation: str | None = None
    zero_experts: int | None = None
    state_size: int | None = None
    vocab_size: int | None = None
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    qk_head_dim: int | None = None
    v_head_dim: int | None = None
    kv_per_token: int | None = None  # key/value cache elements per token of one attention layer
    kv_rule: str | None = None  # how kv_per_token follows from the config
    sliding_window: int | None = None
    sliding_layers: tuple[int, ...] | None = None  # None: every attention layer slides when a window is set

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = asdict(self)
        out["sliding_layers"] = None if self.sliding_layers is None else list(self.sliding_layers)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfigFacts:
        layers = data.get("sliding_layers")
        return cls(**{**data, "sliding_layers": None if layers is None else tuple(layers)})


@dataclass(frozen=True)
class CountedBy:
    """What a structure counted through transformers carries besides its units: the config's
    facts, the label naming transformers' version and class, its total, and a note (a type with
    no language-model head, counted whole)."""

    facts: ConfigFacts
    label: str
    transformers_total: int
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"facts": self.facts.as_dict(), "label": self.label,
                                  "transformers_total": self.transformers_total}
        if self.note is not None:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CountedBy:
        return cls(ConfigFacts.from_dict(data["facts"]), data["label"], data["transformers_total"], data.get("note"))


@dataclass(frozen=True)
class Structure:
    """What :func:`analyse` found, as plain data (JSON-ready with :meth:`to_dict`)."""

    d_model: int
    n_layers: int
    stack: str | None
    layers: list[list[str]]  # per layer of the stack: the kinds of its units, e.g. ["ssm"], ["attention", "moe"]
    ffns: list[FFNUnit]
    mixers: list[MixerUnit]
    parts: dict[str, int]
    total: int  # the whole model transformers builds (each shared tensor once)
    outside: int = 0  # of total, outside the language model and its head (vision encoder, projector): in parts["other"]
    tied_head: bool = False
    counted_by: CountedBy | None = None  # set by fallback.counted_structure; stored as "extra"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, compact: units that differ only in their layer are stored once with the
        list of their layers (and their path with ``{}`` for the layer index)."""
        out = asdict(self)
        out["ffns"] = _compact([asdict(u) for u in self.ffns])
        out["mixers"] = _compact([asdict(u) for u in self.mixers])
        del out["counted_by"]
        out["extra"] = self.counted_by.as_dict() if self.counted_by else {}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Structure:
        d = dict(data)
        d["ffns"] = [FFNUnit(**u) for u in _expand(d["ffns"])]
        d["mixers"] = [MixerUnit(**u) for u in _expand(d["mixers"])]
        extra = d.pop("extra", None)
        return cls(**d, counted_by=CountedBy.from_dict(extra) if extra else None)


def _template(path: str, layer: int | None) -> str:
    if layer is None:
        return path
    parts = path.split(".")
    return ".".join("{}" if p == str(layer) else p for p in parts)


def _compact(units: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for u in units:
        rest = {k: v for k, v in u.items() if k not in ("path", "layer")}
        key = repr((_template(u["path"], u["layer"]), sorted(rest.items())))
        g = groups.setdefault(key, {**rest, "path": _template(u["path"], u["layer"]), "layers": []})
        g["layers"].append(u["layer"])
    return list(groups.values())


def _expand(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if groups and "layers" not in groups[0]:  # already one unit per entry
        return groups
    out = []
    for g in groups:
        rest = {k: v for k, v in g.items() if k not in ("path", "layers")}
        for layer in g["layers"]:
            path = g["path"].replace("{}", str(layer)) if layer is not None else g["path"]
            out.append({**rest, "path": path, "layer": layer})
    out.sort(key=lambda u: (u["layer"] if u["layer"] is not None else -1, u["path"]))
    return out


# -- the tree ----------------------------------------------------------------------------------

class ModuleNode(TypedDict, total=False):
    """A node of the module tree (:func:`ffnlab.training.hf_count.module_tree`, JSON): ``c`` its
    class name; ``k`` its kind (linear, conv, embedding, norm, act, list, module, ref); ``p`` its
    own parameters, name -> shape; ``t`` the names of its parameters that are another module's;
    ``io`` [in, out] of a linear; ``conv`` [channels, groups, kernel] of a Conv1d; ``ch`` its
    children by name; ``ref`` the path of a module written elsewhere."""

    c: str
    k: str
    p: dict[str, list[int]]
    t: list[str]
    io: list[int]
    conv: list[int]
    ch: dict[str, ModuleNode]
    ref: str


# what :func:`ffnlab.training.hf_count.count_with_transformers` returns (JSON): the model's class,
# the auto class it was built through and its kind, transformers' version, the module tree, the
# paths of the input and output embeddings, the total, the config transformers resolved and the
# config.json it was given (arbitrary JSON both), and the names of its sub-configs
CountedModel = TypedDict("CountedModel", {
    "class": str, "auto": str, "auto_kind": str, "transformers_version": str, "tree": ModuleNode,
    "input_embeddings": str | None, "output_embeddings": str | None, "total": int,
    "config": dict[str, Any], "config_json": dict[str, Any], "sub_configs": list[str]}, total=False)


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def own_params(node: ModuleNode) -> int:
    return sum(_numel(s) for s in node.get("p", {}).values())


def subtree_params(node: ModuleNode) -> int:
    return own_params(node) + sum(subtree_params(c) for c in node.get("ch", {}).values())


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(tree: ModuleNode) -> dict[str, ModuleNode]:
    """Every node by its dotted path."""
    out: dict[str, ModuleNode] = {}

    def walk(node: ModuleNode, path: str) -> None:
        out[path] = node
        for name, child in node.get("ch", {}).items():
            walk(child, _join(path, name))

    walk(tree, "")
    return out


def _tokens(name: str) -> list[str]:
    """CamelCase pieces of a class name, lower case: "LongcatFlashMLA" -> longcat, flash, mla."""
    return [t.lower() for t in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]


def _word(node: ModuleNode, words: tuple[str, ...]) -> bool:
    """Whether the class name holds one of ``words``: a whole CamelCase piece for words of up to
    three letters (MLA, not "normlayer"), anywhere for longer ones."""
    name = node["c"].lower()
    tokens = _tokens(node["c"])
    return any((w in tokens) if len(w) <= 3 else (w in name) for w in words)


def _container(node: ModuleNode) -> bool:
    name = str(node["c"]).lower()
    return name.endswith(_CONTAINER_ENDINGS)


@dataclass
class _Item:
    """A leaf left over for the enclosing module to claim: a matrix, an activation, a norm, an
    embedding table, a convolution or a module's own raw parameters."""

    path: str
    kind: str  # linear, act, norm, embedding, conv, raw
    params: int
    din: int = 0
    dout: int = 0
    bias: bool = False
    cls: str = ""


def _tied_only(node: ModuleNode) -> bool:
    """Every parameter below ``node`` is another module's (Zamba's shared block, rebuilt per use
    around the same tensors)."""
    nodes = [node] + [c for c in index(node).values()]
    return any("t" in n for n in nodes) and subtree_params(node) == 0


def _leaf_item(node: ModuleNode, path: str) -> _Item:
    io_ = node.get("io") or [0, 0]
    return _Item(path, node["k"], subtree_params(node), io_[0], io_[1], "bias" in node.get("p", {}), node["c"])


# -- FFN patterns ------------------------------------------------------------------------------

def ffn_pattern(items: list[_Item], d: int, named: bool) -> tuple[int, bool] | None:
    """(d_ff, gated) when ``items`` hold exactly one FFN: a down ``f -> d`` and one up ``d -> f``
    (plain, with an activation or an FFN class name), two ups ``d -> f`` or one ``d -> 2f``
    (gated); extra matrices only in a module whose class says FFN."""
    mats = [i for i in items if i.kind == "linear"]
    has_act = any(i.kind == "act" for i in items)
    for down in (m for m in mats if m.dout == d and m.din > 0):
        f = down.din
        rest = [m for m in mats if m is not down]
        ups = [m for m in rest if m.din == d and m.dout == f]
        fused = [m for m in rest if m.din == d and m.dout == 2 * f and m.dout != f]
        if len(ups) == 2 and not fused:
            found = (f, True)
        elif len(ups) == 1 and (has_act or named):
            found = (f, False)
            fused = []
        elif len(fused) == 1 and not ups and (has_act or named):
            found = (f, True)
        else:
            continue
        extras = [m for m in rest if m not in ups and m not in fused]
        if extras and not named:
            continue
        return found
    return None


def _activation(items: list[_Item]) -> str | None:
    return next((i.cls for i in items if i.kind == "act" and i.cls not in ("Identity", "Dropout")), None)


# -- experts -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Experts:
    n: int
    d_ff: int
    gated: bool
    bias: bool
    params: int
    activation: str | None
    zero_slots: int = 0
    zero_params: int = 0


def _tensors(node: ModuleNode) -> list[list[int]]:
    out = list(node.get("p", {}).values())
    for child in node.get("ch", {}).values():
        out += _tensors(child)
    return out


def _acts(node: ModuleNode, path: str = "") -> list[_Item]:
    out = [_Item(path, "act", 0, cls=node["c"])] if node["k"] == "act" else []
    for name, child in node.get("ch", {}).items():
        out += _acts(child, _join(path, name))
    return out


def tensor_holder(node: ModuleNode) -> bool:
    """A module holding expert tensors: 3-D parameters, no linear, norm or list modules below."""
    if node["k"] != "module" or _word(node, _ATTENTION_WORDS):
        return False

    def clean(n: ModuleNode) -> bool:
        return n["k"] in ("module", "act") and all(clean(c) for c in n.get("ch", {}).values())

    return clean(node) and sum(len(s) >= 2 for s in _tensors(node)) >= 2


def experts_from_tensors(holders: list[ModuleNode], d: int) -> _Experts | None:
    """The routed experts held as tensors (E, a, b), one of a, b = d (and biases (E, x)), in the
    modules ``holders``: two tensors of hidden widths f and 2f (fused gate and up), two of f
    (plain) or three of f (gated)."""
    tensors = [s for h in holders for s in _tensors(h)]
    cubes = [s for s in tensors if len(s) == 3]
    if len(cubes) < 2 or any(len(s) not in (2, 3) for s in tensors):
        return None
    hidden = []
    for _, a, b in cubes:
        if a == d:
            hidden.append(b)
        elif b == d:
            hidden.append(a)
        else:
            return None
    n = min(s[0] for s in cubes)
    if n < 2:
        return None
    hs = sorted(hidden)
    if len(cubes) == 2 and hs[1] == 2 * hs[0]:
        f, gated = hs[0], True
    elif len(cubes) == 2 and hs[0] == hs[1]:
        f, gated = hs[0], False
    elif len(cubes) == 3 and hs[0] == hs[1] == hs[2]:
        f, gated = hs[0], True
    else:
        return None
    bias = any(len(s) == 2 and s[0] >= n for s in tensors)
    zero_params = sum((s[0] - n) * _numel(s[1:]) for s in tensors if s[0] > n)
    zero_slots = max(s[0] for s in cubes) - n
    acts = [a for h in holders for a in _acts(h)]
    return _Experts(n, f, gated, bias, sum(subtree_params(h) for h in holders), _activation(acts),
                    zero_slots, zero_params)


def experts_flat(holder: ModuleNode, d: int, n: int) -> _Experts | None:
    """Routed experts stored as matrices (E x f, d) side by side (DBRX), E = the router's width:
    three of them gated, two plain."""
    tensors = _tensors(holder)
    rows = [a if b == d else b for a, b in (s for s in tensors if len(s) == 2) if d in (a, b)]
    if n < 2 or len(rows) not in (2, 3) or len(rows) != len(tensors) or len(set(rows)) != 1 or rows[0] % n:
        return None
    return _Experts(n, rows[0] // n, len(rows) == 3, False, subtree_params(holder), _activation(_acts(holder)))


def router_width(node: ModuleNode, d: int, skip: set[str]) -> int | None:
    """The width of a router child: a module whose only matrix projects d -> E (E >= 2)."""
    for name, child in node.get("ch", {}).items():
        if name in skip:
            continue
        mats = [i for i in _leaves(child) if i.kind == "linear"]
        if len(mats) == 1 and mats[0].din == d and mats[0].dout >= 2 and _ffn_module(child, d) is None:
            return mats[0].dout
    return None


def experts_list(node: ModuleNode, d: int) -> _Experts | None:
    """Routed experts held as a list of identical FFN modules."""
    kids = list(node.get("ch", {}).values())
    if node["k"] != "list" or len(kids) < 2:
        return None
    found = [_ffn_module(k, d) for k in kids]
    first = found[0]
    if first is None or any(f != first for f in found):
        return None
    f, gated, bias = first
    return _Experts(len(kids), f, gated, bias, subtree_params(node), _activation(_acts(node)))


def _leaves(node: ModuleNode, path: str = "") -> list[_Item]:
    if node["k"] in ("linear", "act", "norm", "embedding", "conv"):
        return [_leaf_item(node, path)]
    out = [_Item(path, "raw", own_params(node))] if own_params(node) else []
    for name, child in node.get("ch", {}).items():
        out += _leaves(child, _join(path, name))
    return out


# the most linear maps one FFN module holds (gate, up, down and a few more): a subtree with more is not one FFN
_FFN_LINEARS = 16


def _ffn_module(node: ModuleNode, d: int) -> tuple[int, bool, bool] | None:
    """(d_ff, gated, bias) of a module that is exactly one FFN (its whole subtree)."""
    if node["k"] not in ("module",) or _word(node, _ATTENTION_WORDS) or _container(node):
        return None
    items = _leaves(node)
    if any(i.kind in ("conv", "embedding") for i in items) or sum(i.kind == "linear" for i in items) > _FFN_LINEARS:
        return None  # a whole layer of experts is no one FFN (reading it as one costs seconds at 16,384 experts)
    found = ffn_pattern(items, d, _word(node, _FFN_WORDS))
    if found is None:
        return None
    return found[0], found[1], any(i.bias for i in items if i.kind == "linear")


# -- the walk ----------------------------------------------------------------------------------

class _Walk:
    def __init__(self, tree: ModuleNode, d: int, stack: str | None, head: str | None,
                 config: dict[str, Any]):
        self.nodes = index(tree)
        self.d, self.stack, self.head, self.config = d, stack, head, config
        self.stacks = [stack] if stack else []
        if stack:
            parent = stack.rpartition(".")[0]
            size = len(self.nodes[stack]["ch"])
            self.stacks += [p for p, n in self.nodes.items() if p != stack and n["k"] == "list"
                            and p.rpartition(".")[0] == parent and len(n.get("ch", {})) == size]
        self.ffns: list[FFNUnit] = []
        self.mixers: list[MixerUnit] = []
        self.leftover: list[_Item] = []

    def layer_of(self, path: str) -> int | None:
        """The layer index of ``path``: its position in the stack, or in a list beside the stack
        with as many items (XLM keeps attentions and FFNs in parallel lists)."""
        for stack in self.stacks:
            if path.startswith(stack + "."):
                first = path[len(stack) + 1:].split(".")[0]
                return int(first) if first.isdigit() else None
        return None

    def visit(self, node: ModuleNode, path: str, layer: int | None, reused: bool = False) -> list[_Item]:
        """Record the units under ``node``; return the leaves no unit claimed."""
        k = node["k"]
        if path == self.head:
            return [_Item(path, "embedding", 0 if reused else subtree_params(node))]
        if k == "ref":
            target = self.nodes.get(node["ref"])
            if target is None:
                return []
            self.visit(target, path, layer, reused=True)
            return []
        if layer is None:
            layer = self.layer_of(path)
        if k in ("linear", "act", "norm", "embedding", "conv"):
            item = _leaf_item(node, path)
            if reused:
                item.params = 0
            return [item]
        if self._moe(node, path, layer, reused) or self._mixer(node, path, layer, reused):
            return []
        items = [_Item(path, "raw", 0 if reused else own_params(node))] if own_params(node) else []
        for name, child in node.get("ch", {}).items():
            items += self.visit(child, _join(path, name), layer, reused)
        if k != "list" and self._loose_ffn(node, path, layer, items, reused):
            return [i for i in items if i.kind in ("norm", "embedding")]
        return items

    def _loose_ffn(self, node: ModuleNode, path: str, layer: int | None, items: list[_Item],
                   reused: bool) -> bool:
        if _word(node, _ATTENTION_WORDS) or any(i.kind == "conv" for i in items):
            return False
        found = ffn_pattern(items, self.d, _word(node, _FFN_WORDS))
        if found is None:
            return False
        if layer is None and path == "":
            return False
        claimed = [i for i in items if i.kind not in ("norm", "embedding")]
        reused = reused or _tied_only(node)
        self.ffns.append(FFNUnit(
            path=path, layer=layer, moe=False, d_ff=found[0], gated=found[1], activation=_activation(items),
            bias=any(i.bias for i in claimed if i.kind == "linear"),
            params=0 if reused else sum(i.params for i in claimed), reused=reused))
        return True

    def _moe(self, node: ModuleNode, path: str, layer: int | None, reused: bool) -> bool:
        if _word(node, _ATTENTION_WORDS) and not _word(node, ("moe", "expert")):
            return False
        kids = node.get("ch", {})
        holders = [n for n, c in kids.items() if tensor_holder(c)]
        singles = {n: experts_from_tensors([kids[n]], self.d) for n in holders}
        parsed = {n: e for n, e in singles.items() if e is not None}
        shared_holders: list[str] = []
        experts: _Experts | None
        if parsed:  # routed experts: the most; other expert tensors (Inkling's) are shared experts
            main = max(parsed, key=lambda n: parsed[n].n)
            experts = parsed[main]
            shared_holders = [n for n in parsed if n != main]
            holders = [main]
        else:
            experts = experts_from_tensors([kids[n] for n in holders], self.d) if holders else None
        if experts is None and len(holders) == 1:
            width = router_width(node, self.d, set(holders))
            experts = experts_flat(kids[holders[0]], self.d, width) if width else None
        if experts is None:
            holders = []
            for name, child in kids.items():
                experts = experts_list(child, self.d)
                if experts is not None:
                    holders = [name]
                    break
        if experts is None:
            return False
        d = self.d
        router, shared, n_shared, d_shared, routed_by = 0, 0, 0, None, False
        scored = 0  # the router's outputs: the experts, and any zero-computation slots past them
        for name in shared_holders:
            n_shared += parsed[name].n
            shared += parsed[name].params
            d_shared = parsed[name].d_ff
        for name, child in kids.items():
            if name in holders or name in shared_holders:
                continue
            sub = _ffn_module(child, d)
            if sub is not None:
                n_shared += 1
                shared += subtree_params(child)
                d_shared = sub[0]
                continue
            items = _leaves(child)
            mats = [i for i in items if i.kind == "linear"]
            scores = [m.dout for m in mats if m.din == d and experts.n <= m.dout <= 2 * experts.n]
            if scores:
                router += subtree_params(child)
                routed_by = True
                scored = max(scored, max(scores))
            elif any(m.din == d and m.dout == 1 for m in mats):
                shared += subtree_params(child)  # a shared expert's scalar gate (Qwen-MoE)
            else:
                router += subtree_params(child)  # routing extras (latent projections, biases)
        if not routed_by and kids[holders[0]]["k"] == "list":
            return False  # a list of identical FFNs without a router is a layer stack, not experts
        reused = reused or _tied_only(node)
        own = own_params(node)
        total = subtree_params(node)
        self.ffns.append(FFNUnit(
            path=path, layer=layer, moe=True, d_ff=experts.d_ff, gated=experts.gated,
            activation=experts.activation, bias=experts.bias, params=0 if reused else total,
            n_experts=experts.n, router=0 if reused else router + own, routed=0 if reused else experts.params,
            shared=0 if reused else shared, n_shared=n_shared, d_shared=d_shared,
            zero_slots=max(experts.zero_slots, scored - experts.n),
            zero_params=0 if reused else experts.zero_params, reused=reused))
        return True

    def _mixer(self, node: ModuleNode, path: str, layer: int | None, reused: bool) -> bool:
        kids = node.get("ch", {})
        convs = [c for c in kids.values() if c["k"] == "conv"]
        kind = None
        if convs and not _word(node, _FFN_WORDS):
            a_like = [s for n, s in node.get("p", {}).items() if n.startswith("A")]
            a_like += [s for c in kids.values() for n, s in c.get("p", {}).items() if n.startswith("A")]
            if _word(node, _LINEAR_WORDS):
                kind = "linear_attention"
            elif a_like:
                kind = "ssm"
            else:
                kind = "short_conv"
        elif _word(node, _NO_CONV_LINEAR_WORDS) and not _word(node, _FFN_WORDS) and not _container(node):
            kind = "linear_attention"
        elif _word(node, _ATTENTION_WORDS) and not _container(node) and not _inner_attention(node):
            kind = "attention"
        if kind is None:
            return False
        reused = reused or _tied_only(node)
        conv_state = sum(c["conv"][0] * (c["conv"][2] - 1) for c in convs if "conv" in c)
        a = [s for n, s in node.get("p", {}).items() if n.startswith("A")]
        a += [s for c in kids.values() for n, s in c.get("p", {}).items() if n.startswith("A")]
        heads = state_2d = None
        for shape in a:
            if len(shape) == 2:
                state_2d = _numel(shape)
            elif shape:
                heads = max(shape)
        d = self.d
        inner = next((i.din for i in _leaves(node) if i.kind == "linear" and i.dout == d), None)
        self.mixers.append(MixerUnit(path=path, layer=layer, kind=kind, cls=node["c"],
                                     params=0 if reused else subtree_params(node), conv_state=conv_state,
                                     heads=heads, inner=inner, state_2d=state_2d, reused=reused))
        return True


def _inner_attention(node: ModuleNode) -> bool:
    """Whether an attention child holds every matrix of ``node``, which only adds norms around
    it (DBRX's NormAttentionNorm): the child is the attention."""
    mats = [i for i in _leaves(node) if i.kind == "linear" or i.kind == "raw"]
    for child in node.get("ch", {}).values():
        if child["k"] == "module" and _word(child, _ATTENTION_WORDS):
            inner = [i for i in _leaves(child) if i.kind == "linear" or i.kind == "raw"]
            if len(inner) == len(mats) and own_params(node) == 0:
                return True
    return False


def _lists(tree: ModuleNode) -> list[tuple[str, ModuleNode]]:
    return [(p, n) for p, n in index(tree).items() if n["k"] == "list" and n.get("ch")]


def main_stack(tree: ModuleNode, root: str) -> str | None:
    """The layer stack: the list under ``root`` holding the most parameters."""
    best, size = None, -1
    for path, node in _lists(tree):
        if root and not (path == root or path.startswith(root + ".")):
            continue
        n = subtree_params(node)
        if n > size and all(k.isdigit() for k in node["ch"]):
            best, size = path, n
    return best


def language_root(tree: ModuleNode, embeddings: str | None) -> str:
    """The language model's module: the nearest ancestor of the input embeddings holding a layer
    stack ("" = the whole model)."""
    if not embeddings:
        return ""
    parts = embeddings.split(".")
    nodes = index(tree)
    for n in range(len(parts) - 1, 0, -1):
        anc = ".".join(parts[:n])
        if anc in nodes and _lists(nodes[anc]):
            return anc
    return ""


def analyse(counted: CountedModel, multimodal: bool = False) -> Structure:
    """The structure of a model counted by :func:`ffnlab.training.hf_count.count_with_transformers`.

    With ``multimodal``, the units (FFNs, mixers, layers) are those of the language model (the
    module around the input embeddings) and the LM head; the rest (vision encoder, projector) is
    counted in the total as ``outside``, in ``parts["other"]``: the total is always the whole model.
    """
    tree, config = counted["tree"], counted.get("config", {})
    nodes = index(tree)
    emb_path = counted.get("input_embeddings")
    head = counted.get("output_embeddings")
    emb = nodes.get(emb_path or "\0")
    d = config.get("hidden_size")
    emb_width = emb["p"]["weight"][1] if emb and "weight" in emb.get("p", {}) else None
    if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
        d = emb_width or 0
    root = language_root(tree, emb_path) if multimodal else ""
    stack = main_stack(tree, root)
    walk = _Walk(tree, d, stack, head, config)
    start = nodes[root] if root else tree
    left = walk.visit(start, root, None)
    head_node = nodes.get(head or "\0")
    tied_head = bool(head_node and "t" in head_node and not head_node.get("p"))
    if root and head and not head.startswith(root + ".") and head_node is not None:
        left += walk.visit(head_node, head, None)
    # projections between an embedding of another width and d (OPT-350m's project_in/out) belong
    # to the embedding, as in ffnlab's own count
    proj = {emb_width} - {d, None}
    for i in left:
        if i.kind == "linear" and walk.layer_of(i.path) is None and proj & {i.din, i.dout}:
            i.kind = "embedding"
    parts = dict.fromkeys(PARTS, 0)
    for f in walk.ffns:
        parts["ffn"] += f.params
    for m in walk.mixers:
        parts[m.kind] += m.params
    for i in left:
        parts[{"embedding": "embedding", "norm": "norms"}.get(i.kind, "other")] += i.params
    language = sum(parts.values())
    whole = subtree_params(tree)
    parts["other"] += whole - language
    n_layers = len(nodes[stack]["ch"]) if stack else 0
    layers: list[list[str]] = [[] for _ in range(n_layers)]
    for m in walk.mixers:
        if m.layer is not None and m.layer < n_layers:
            layers[m.layer].append(m.kind)
    for f in walk.ffns:
        if f.layer is not None and f.layer < n_layers:
            layers[f.layer].append("moe" if f.moe else "dense")
    return Structure(d_model=d, n_layers=n_layers, stack=stack, layers=layers, ffns=walk.ffns,
                     mixers=walk.mixers, parts=parts, total=whole, outside=whole - language, tied_head=tied_head)


def layer_counts(s: Structure) -> dict[str, int]:
    """How many layers of the stack have each kind of unit, the kinds in the order the stack first
    shows them (not a set's order, which changes from run to run with string hashing)."""
    c: Counter[str] = Counter()
    for kinds in s.layers:
        c.update(dict.fromkeys(kinds).keys())
    return dict(c)
