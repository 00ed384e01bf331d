"""House rules a reader relies on: one home for the byte rules, docstring references that resolve,
a test tree that mirrors the package with its helpers in one place.

Oracles: the source tree itself (parsed with ``ast``, imported with ``importlib``), and planted
snippets (and a planted test tree) that each check must flag, so a check that can no longer fail fails here.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from paths import ROOT

from ffnlab.sizing.memory import byte_rules

SRC = ROOT / "src" / "ffnlab"
HOME = SRC / "sizing" / "memory" / "byte_rules.py"
DTYPE_NAMES = set(byte_rules.DTYPE_BYTES)
OPTIMIZER_NAMES = set(byte_rules.OPTIMIZERS)


def _strings(node: ast.AST) -> list[str] | None:
    """The elements of a tuple/list/set literal if every one is a string constant."""
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return None
    out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out if len(out) == len(node.elts) else None


def byte_tables(source: str) -> list[int]:
    """Lines of module-level tables that restate a byte rule: a sequence of dtype (or optimizer)
    names bound to a name that says DTYPES or OPTIMIZERS, or a mapping from two or more dtype (or
    optimizer) names to numbers (bytes, bits, states), whatever its name."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        label = " ".join(t.id for t in targets if isinstance(t, ast.Name)).upper()
        names = _strings(value)
        if (names is not None and len(names) >= 2 and ("DTYPE" in label or "OPTIMIZER" in label)
                and (set(names) <= DTYPE_NAMES or set(names) <= OPTIMIZER_NAMES)):
            found.append(node.lineno)
        if isinstance(value, ast.Dict):
            keys = [k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            numeric = all(isinstance(v, ast.Constant) and isinstance(v.value, int | float) for v in value.values)
            if numeric and (len(DTYPE_NAMES & set(keys)) >= 2 or len(OPTIMIZER_NAMES & set(keys)) >= 2):
                found.append(node.lineno)
    return found


@pytest.mark.parametrize("snippet", [
    'TRAIN_DTYPES = ("fp32", "bf16", "fp16")',
    'BYTES = {"bf16": 2, "fp16": 2, "other": 9}',
    'STATE: dict[str, int] = {"adamw": 8, "sgd": 0}',
    'OPTIMIZERS = ["adamw", "sgd-momentum"]',
])
def test_the_detector_flags_a_planted_copy(snippet):
    assert byte_tables(snippet)


def test_dtype_and_optimizer_tables_live_in_byte_rules_alone():
    assert byte_tables(HOME.read_text()), "the detector no longer sees the home table itself"
    copies = {str(p.relative_to(SRC)): lines for p in sorted(SRC.rglob("*.py")) if p != HOME
              for lines in [byte_tables(p.read_text())] if lines}
    assert copies == {}, f"byte rules restated outside sizing/memory/byte_rules.py: {copies}"


ROLE = re.compile(r":(mod|func|class|data|meth|attr):`~?([A-Za-z_][\w.]*)`")


def _resolves(target: str, package: str) -> bool:
    """Whether a Sphinx target names a module, or an attribute of one, absolutely or relative to
    the package of the file that cites it."""
    for name in (target, f"{package}.{target}"):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            try:
                if importlib.util.find_spec(module) is None:
                    continue
            except (ImportError, ValueError):
                continue
            obj: object = importlib.import_module(module)
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
                if obj is None:
                    break
            else:
                return True
    return False


def references(source: str) -> list[str]:
    return [m.group(2) for m in ROLE.finditer(source)]


def test_the_reference_check_flags_a_module_that_does_not_exist():
    assert not _resolves("ffnlab.counting", "ffnlab.sizing")
    assert not _resolves("ffnlab.sizing.audit.no_such_function", "ffnlab.sizing")
    assert _resolves("ffnlab.sizing.audit.audit_config", "ffnlab.sizing")
    assert _resolves("trend", "ffnlab.experiments.analysis")  # relative to the citing package


def _defined_here(name: str, source: str) -> bool:
    """An undotted target (a method, an attribute, an imported name) that the citing file defines
    or imports: Sphinx resolves it in the file's own scope."""
    return re.search(rf"\b(def|class)\s+{name}\b|^\s*{name}\s*[:=]|\bimport\b[^\n]*\b{name}\b|\bself\.{name}\b",
                     source, re.M) is not None


def test_every_docstring_reference_resolves():
    broken = []
    for p in sorted(SRC.rglob("*.py")):
        package = ".".join(("ffnlab", *p.relative_to(SRC).parent.parts))
        module = ".".join(("ffnlab", *p.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")
        source = p.read_text()
        for target in references(source):
            if "." not in target and _defined_here(target, source):
                continue
            if not (_resolves(target, package) or _resolves(target, module)):
                broken.append(f"{p.relative_to(SRC)}: {target}")
    assert broken == [], "docstring references that name nothing: " + ", ".join(broken)


def test_every_lazy_export_of_the_package_resolves():
    """``from ffnlab import X`` for each name of ``ffnlab.__all__`` (a moved module once left
    ``training_memory`` pointing at its old home)."""
    import ffnlab

    missing = []
    for name in ffnlab.__all__:
        try:
            getattr(ffnlab, name)
        except (AttributeError, ImportError):
            missing.append(name)
    assert missing == []


def test_a_saved_spec_without_a_newer_field_reads_as_the_spec_would_default_it():
    """Readers of saved specs take margin, maturity and the rest from spec_field: a record
    written before a field existed (the key absent) gives what a spec read today defaults it to."""
    from dataclasses import asdict

    from ffnlab.experiments.sweep.spec import load_spec, spec_field

    saved = asdict(load_spec("golden-quick"))  # what a sweep record keeps
    fresh = asdict(load_spec("golden-quick").__class__(name="x", arms=[], seeds=[]))  # every default
    for key in saved:
        assert spec_field(saved, key) == saved[key]
        older = {k: v for k, v in saved.items() if k != key}
        if key in ("name", "arms", "seeds"):  # no default: a record always has them
            with pytest.raises(KeyError):
                spec_field(older, key)
        else:
            assert spec_field(older, key) == fresh[key]


# -- the test tree mirrors the package -----------------------------------------------------------

TESTS = ROOT / "tests"
NOT_MIRRORS = {"project", "core"}  # whole-repo checks; the package's top-level modules


def misplaced(tests: Path, package: Path) -> list[str]:
    """Python files of the test tree ``tests`` out of place, relative to it: a test module directly
    in tests/, in tests/helpers/ or tests/data/, or in a folder that is neither a sub-package of
    ``package`` nor one of ``NOT_MIRRORS``; any other module (conftest.py aside) outside
    tests/helpers/."""
    out = []
    for p in sorted(tests.rglob("*.py")):
        rel = p.relative_to(tests)
        folder = rel.parent.as_posix()
        if p.name == "conftest.py":
            continue
        if p.name.startswith("test_"):
            mirrors = folder in NOT_MIRRORS or (package / folder).is_dir()
            if folder in (".", "helpers", "data") or not mirrors:
                out.append(rel.as_posix())
        elif folder != "helpers":
            out.append(rel.as_posix())
    return out


def test_the_layout_check_flags_planted_strays(tmp_path):
    package = tmp_path / "src" / "pkg"
    (package / "sizing" / "memory").mkdir(parents=True)
    tests = tmp_path / "tests"
    placed = ["conftest.py", "helpers/cases.py", "sizing/test_a.py", "sizing/memory/test_b.py",
              "project/test_c.py", "core/test_d.py"]
    strays = ["helpers/test_e.py", "nowhere/test_f.py", "sizing/__init__.py", "sizing/cases.py", "test_g.py"]
    for name in placed + strays:
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    assert misplaced(tests, package) == strays


def test_tests_mirror_the_package_with_helpers_in_one_place():
    assert misplaced(TESTS, SRC) == [], ("test modules belong in the folder of the package part they test, "
                                         "other modules in tests/helpers/")


def imports_of_test_modules(source: str) -> list[str]:
    """The test modules (``test_*``) a source imports: what they share belongs in tests/helpers/."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [n for n in names if n.split(".")[-1].startswith("test_")]
    return found


def test_the_import_check_flags_a_planted_import_of_a_test_module():
    assert imports_of_test_modules("from test_verdicts import fake_sweep\nimport os") == ["test_verdicts"]
    assert imports_of_test_modules("import tests.sizing.test_counting as t") == ["tests.sizing.test_counting"]
    assert imports_of_test_modules("from fake_sweeps import fake_sweep") == []


def test_no_test_module_is_imported_helpers_are():
    found = {str(p.relative_to(TESTS)): names for p in sorted(TESTS.rglob("*.py"))
             for names in [imports_of_test_modules(p.read_text(encoding="utf-8"))] if names}
    assert found == {}, f"imports of test modules (move what they share to tests/helpers/): {found}"


# -- the memory path takes one Workload and one Layout ---------------------------------------------
# Its modules: the memory model, fine-tuning, serving and size on top of it, and the commands that build the
# workload from their flags. A call there passes its settings by name, never a dict unpacked with **
# into a function or class the path defines, and nothing is waved through with ``type: ignore``.
MEMORY_PATH = sorted((SRC / "sizing" / "memory").glob("*.py")) + [
    SRC / "sizing" / "finetune.py", SRC / "sizing" / "serving.py", SRC / "sizing" / "size.py",
    SRC / "sizing" / "audit.py",
    SRC / "cli" / "sizing.py", SRC / "cli" / "fit.py", SRC / "cli" / "memory_flags.py", SRC / "cli" / "memory_view.py"]
# callees that may take **: a record of accelerators.json into its dataclass; Typer's parameters into
# the flags as given (the one place the command line enters)
UNPACKING_ALLOWED = {"Accelerator", "MemoryFlags"}


def defined_names(sources: list[str]) -> set[str]:
    """The functions and classes the sources define, at any depth."""
    return {n.name for s in sources for n in ast.walk(ast.parse(s))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}


def unpacked_calls(source: str, names: set[str]) -> list[str]:
    """``name:line`` of each call of one of ``names`` (a plain name, or an attribute's last part)
    that unpacks a mapping with ``**``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not any(k.arg is None for k in node.keywords):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in names and name not in UNPACKING_ALLOWED:
            found.append(f"{name}:{node.lineno}")
    return found


def type_ignores(source: str) -> list[int]:
    """Lines with a ``type: ignore`` comment."""
    return [i for i, line in enumerate(source.splitlines(), 1) if re.search(r"#.*\btype:\s*ignore", line)]


def test_the_memory_path_checks_flag_planted_unpackings_and_ignores():
    planted = ("def memory_summary(cfg, **kw): ...\nopts = {'batch': 2}\n"
               "m = memory_summary(cfg, **opts)\nx = sizing.memory_summary(cfg, seq_len=1, **opts)\n"
               "y = dict(**opts)\nz = Accelerator(**opts)\n")
    names = defined_names([planted]) | {"Accelerator"}
    assert unpacked_calls(planted, names) == ["memory_summary:3", "memory_summary:4"]
    assert type_ignores("a = f(**kw)  # type: ignore[arg-type]\nb = 1\nc = g()  #type:ignore") == [1, 3]
    assert type_ignores("'''type: ignore in a docstring is not a comment'''") == []


def test_the_memory_path_passes_no_dict_with_star_star_and_ignores_no_type():
    sources = {p.relative_to(SRC).as_posix(): p.read_text(encoding="utf-8") for p in MEMORY_PATH}
    names = defined_names(list(sources.values()))
    assert {"memory_summary", "step_timeline", "training_table", "fit", "Workload", "Layout"} <= names
    unpacked = {p: found for p, s in sources.items() if (found := unpacked_calls(s, names))}
    assert unpacked == {}, f"** into the memory path's own functions (pass a Workload / Layout): {unpacked}"
    ignored = {p: found for p, s in sources.items() if (found := type_ignores(s))}
    assert ignored == {}, f"type: ignore in the memory path: {ignored}"
