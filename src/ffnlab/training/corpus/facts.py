"""Synthetic facts with known entropy, for measuring how much knowledge a model stores.

After Allen-Zhu and Li (2024), "Physics of Language Models: Part 3.3, Knowledge Capacity
Scaling Laws" (arXiv:2404.05405): random subjects each get one value per relation, drawn
uniformly from that relation's pool of ``values`` random strings, so a relation's value
carries exactly log2(values) bits. Two styles:

* ``compact`` (their bioD in spirit): one line per subject, ``subject:v1,v2,...`` with the
  relations given by position (no commas when values are single characters);
* ``bio`` (their bioS in spirit): a templated biography, one sentence per relation, each
  sentence's template drawn at random from a few paraphrases.

Every subject is one document. Every ``holdout``-th subject (index % holdout == 0) goes to the
validation split, so it is never trained on: a model should store no bits about those.

The corpus spec ``facts:subjects=N,relations=R,values=K,value_len=L,style=S,seed=X,holdout=H``
(any subset; the rest take the defaults of :class:`FactSpec`) names a deterministic bank: the
same spec always gives the same text. Pure Python: nothing here imports torch or numpy.
"""

from __future__ import annotations

import math
import random
import string
from dataclasses import dataclass, fields
from functools import lru_cache

from ffnlab.errors import FfnlabError, require

PREFIX = "facts:"
STYLES = ("compact", "bio")
SUBJECT_LEN = 5  # letters per subject name (26^5 = 11.9M names; drawn without repetition)
ALPHABET = string.ascii_lowercase + string.digits
# The bounds of a spec's parameters, each checked before anything is built (a spec is typed by a
# user: ``value_len=10000000`` once meant a 36**10**7 integer computed before any bound).
MAX_SUBJECTS = 1_000_000
MAX_RELATIONS = 64  # compact style; bio has len(BIO_RELATIONS)
MAX_VALUES = 1_000_000  # strings in one relation's pool
MAX_VALUE_LEN = 32  # characters of one value: 36**32 possible strings, far past MAX_VALUES
MAX_FACTS = 8_000_000  # subjects x relations: each fact is kept in memory with its prompt
MAX_SEED = 2**63 - 1

# bio style: relation names and sentence paraphrases; {s} is the subject, {v} the value.
BIO_RELATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("birth city", ("{s} was born in {v}.", "{s} came into the world in {v}.", "The birthplace of {s} is {v}.")),
    ("university", ("{s} studied at {v}.", "{s} graduated from {v}.", "{s} went to college at {v}.")),
    ("major", ("{s} majored in {v}.", "{s} took a degree in {v}.", "The field {s} studied was {v}.")),
    ("employer", ("{s} works for {v}.", "{s} is employed by {v}.", "{s} earns a living at {v}.")),
    ("work city", ("{s} works in {v}.", "{s} commutes to {v}.", "The office of {s} is in {v}.")),
    ("birth month", ("{s} was born in the month {v}.", "{s} celebrates a birthday in {v}.",
                     "The birth month of {s} is {v}.")),
    ("hobby", ("{s} spends weekends on {v}.", "{s} enjoys {v}.", "In spare time {s} does {v}.")),
    ("pet", ("{s} keeps a {v} at home.", "{s} owns a {v}.", "The pet of {s} is a {v}.")),
)


@dataclass(frozen=True)
class FactSpec:
    """What a fact bank holds: ``subjects`` x ``relations`` facts, each value one of ``values``
    random strings of ``value_len`` characters (letters and digits)."""

    subjects: int = 1000
    relations: int = 4
    values: int = 64
    value_len: int = 2
    style: str = "compact"
    seed: int = 0
    holdout: int = 10

    @property
    def bits_per_fact(self) -> float:
        """Entropy of one value: log2(values), the values being uniform over the pool."""
        return math.log2(self.values)

    def spec(self) -> str:
        """The canonical corpus spec string for this bank."""
        return PREFIX + ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


@dataclass(frozen=True)
class Fact:
    """One (subject, relation, value) and where its value sits in the subject's document."""

    subject: int
    relation: int
    value: str
    prompt: str  # the document text before the value
    trained: bool


@dataclass(frozen=True)
class FactBank:
    spec: FactSpec
    subjects: tuple[str, ...]
    pools: tuple[tuple[str, ...], ...]
    documents: tuple[str, ...]
    facts: tuple[Fact, ...]

    def split(self) -> tuple[list[str], list[str]]:
        """(training, validation) documents: every ``holdout``-th subject is validation."""
        h = self.spec.holdout
        train = [d for i, d in enumerate(self.documents) if i % h != 0]
        val = [d for i, d in enumerate(self.documents) if i % h == 0]
        return train, val

    def trained_facts(self) -> list[Fact]:
        return [f for f in self.facts if f.trained]

    def heldout_facts(self) -> list[Fact]:
        return [f for f in self.facts if not f.trained]


def check_spec(s: FactSpec) -> FactSpec:
    """``s`` if every parameter is within its bound (``MAX_*`` above), else one error line; no
    check computes more than small integers, so any spec is answered at once."""
    require(s.style in STYLES, f"facts: style must be one of {', '.join(STYLES)}, got {s.style!r}")
    require(10 <= s.subjects <= MAX_SUBJECTS, f"facts: subjects must be 10..{MAX_SUBJECTS}, got {s.subjects}")
    limit = len(BIO_RELATIONS) if s.style == "bio" else MAX_RELATIONS
    require(1 <= s.relations <= limit, f"facts: relations must be 1..{limit} for style {s.style}, got {s.relations}")
    require(1 <= s.value_len <= MAX_VALUE_LEN, f"facts: value_len must be 1..{MAX_VALUE_LEN}, got {s.value_len}")
    most = min(len(ALPHABET) ** s.value_len, MAX_VALUES)  # value_len <= 32 here: a small power
    require(2 <= s.values <= most, f"facts: values must be 2..{most} for value_len {s.value_len}, got {s.values}")
    require(2 <= s.holdout <= s.subjects, f"facts: holdout must be 2..subjects, got {s.holdout}")
    require(0 <= s.seed <= MAX_SEED, f"facts: seed must be 0..{MAX_SEED}, got {s.seed}")
    require(s.subjects * s.relations <= MAX_FACTS,
            f"facts: subjects x relations must be at most {MAX_FACTS:,} facts, got {s.subjects:,} x {s.relations}")
    return s


def parse_spec(text: str) -> FactSpec:
    """A :class:`FactSpec` from ``facts:key=value,...`` (keys as in :class:`FactSpec`)."""
    require(text.startswith(PREFIX), f"a facts corpus spec starts with {PREFIX!r}, got {text!r}")
    names = {f.name: f.type for f in fields(FactSpec)}
    values: dict[str, object] = {}
    body = text[len(PREFIX):].strip()
    for item in filter(None, (p.strip() for p in body.split(","))):
        key, eq, raw = item.partition("=")
        key = key.strip()
        require(eq == "=" and key in names,
                f"facts: bad item {item!r}; use KEY=VALUE with KEY among {', '.join(names)}")
        if key == "style":
            values[key] = raw.strip()
        else:
            try:
                values[key] = int(raw)
            except ValueError:
                raise FfnlabError(f"facts: {key} must be an integer, got {raw!r}") from None
    return check_spec(FactSpec(**values))  # type: ignore[arg-type]


def _random_strings(rng: random.Random, n: int, length: int, alphabet: str) -> tuple[str, ...]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        s = "".join(rng.choice(alphabet) for _ in range(length))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return tuple(out)


def _document(spec: FactSpec, rng: random.Random, name: str, values: list[str]) -> tuple[str, list[str]]:
    """The subject's document and, for each relation, the text before its value."""
    prompts, text = [], ""
    if spec.style == "compact":
        text, sep = name + ":", "," if spec.value_len > 1 else ""
        for r, v in enumerate(values):
            text += sep if r else ""
            prompts.append(text)
            text += v
        return text + "\n", prompts
    name = name.capitalize()
    for r, v in enumerate(values):
        template = rng.choice(BIO_RELATIONS[r][1])
        before, _, after = template.partition("{v}")
        text += (" " if r else "") + before.format(s=name)
        prompts.append(text)
        text += v + after.format(s=name)
    return text + "\n", prompts


@lru_cache(maxsize=8)
def make_bank(spec: FactSpec) -> FactBank:
    """The deterministic fact bank for ``spec``."""
    check_spec(spec)
    rng = random.Random(f"ffnlab-facts-{spec.seed}")
    subjects = _random_strings(rng, spec.subjects, SUBJECT_LEN, string.ascii_lowercase)
    pools = tuple(_random_strings(rng, spec.values, spec.value_len, ALPHABET) for _ in range(spec.relations))
    docs, facts = [], []
    for i, name in enumerate(subjects):
        values = [rng.choice(pools[r]) for r in range(spec.relations)]
        doc, prompts = _document(spec, rng, name, values)
        docs.append(doc)
        trained = i % spec.holdout != 0
        facts += [Fact(i, r, v, p, trained) for r, (v, p) in enumerate(zip(values, prompts, strict=True))]
    return FactBank(spec, subjects, pools, tuple(docs), tuple(facts))


def relation_names(spec: FactSpec) -> list[str]:
    if spec.style == "bio":
        return [BIO_RELATIONS[r][0] for r in range(spec.relations)]
    return [f"attribute {r + 1}" for r in range(spec.relations)]
