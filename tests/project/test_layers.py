"""The layer rule, read from the source: sizing -> training -> experiments -> cli, never upward.

Every ``import`` statement in ``src/ffnlab`` (at module level or inside a function) is read with
``ast``; a change that makes sizing import torch, or training import experiments, fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from paths import ROOT

SRC = ROOT / "src" / "ffnlab"
CORE = {"ffnlab", "ffnlab.errors", "ffnlab.render", "ffnlab.provenance", "ffnlab.files", "ffnlab.validation",
        "ffnlab.escape", "ffnlab.monotone", "ffnlab.netwait", "ffnlab.interrupt"}
LAYERS = ["core", "sizing", "training", "experiments", "cli"]
HEAVY = ("torch", "numpy", "scipy", "matplotlib", "safetensors", "transformers", "tokenizers", "pandas")


def module_name(path: Path, root: Path = SRC) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module == "ffnlab.__main__":
        return "cli"
    if module in CORE or len(parts) < 2:
        return "core"
    return parts[1] if parts[1] in LAYERS else "core"


def imports_of(path: Path, root: Path = SRC) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in ``path``; ``from ffnlab import x`` -> ffnlab.x."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for a in node.names:
                sub = f"{base}.{a.name}"
                where = root.parent / sub.replace(".", "/")
                out.append((node.lineno, sub if where.exists() or where.with_suffix(".py").exists() else base))
    return out


SOURCES = sorted(SRC.rglob("*.py"))


def test_every_module_is_in_a_layer() -> None:
    assert SOURCES
    for p in SOURCES:
        m = module_name(p)
        assert layer_of(m) != "core" or m in CORE, f"{m} sits outside sizing/training/experiments/cli"
    assert {layer_of(module_name(p)) for p in SOURCES} == set(LAYERS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_only_go_down(path: Path) -> None:
    me = module_name(path)
    mine = LAYERS.index(layer_of(me))
    for line, mod in imports_of(path):
        if mod == "ffnlab" or mod.startswith("ffnlab."):
            theirs = LAYERS.index(layer_of(mod))
            assert theirs <= mine, f"{me}:{line} imports {mod} ({LAYERS[theirs]} is above {LAYERS[mine]})"
        elif layer_of(me) in ("core", "sizing"):
            top = mod.split(".")[0]
            assert top not in HEAVY, f"{me}:{line} imports {mod}: sizing and core stay pure Python"


def test_cli_groups_import_no_other_group() -> None:
    """A command group (a module with ``@app.command``) imports shared CLI helpers, never another
    group; helpers import no group; so the only place that sees every group is ``ffnlab.cli``."""
    paths = [p for p in sorted((SRC / "cli").glob("*.py")) if p.name != "__init__.py"]
    groups = {module_name(p) for p in paths if "@app.command" in p.read_text(encoding="utf-8")}
    assert {"ffnlab.cli.sizing", "ffnlab.cli.training", "ffnlab.cli.experiments"} <= groups
    for path in paths:
        me = module_name(path)
        bad = {m for _, m in imports_of(path) if m in groups and m != me}
        assert not bad, f"{me} imports the command group(s) {sorted(bad)}"


def test_the_checker_catches_a_violation(tmp_path: Path) -> None:
    """The reader resolves relative and absolute imports, so a planted upward import is seen."""
    root = tmp_path / "ffnlab"
    for sub in ("sizing", "training", "experiments"):
        (root / sub).mkdir(parents=True)
        (root / sub / "__init__.py").write_text("")
    (root / "training" / "trainer.py").write_text("")
    (root / "experiments" / "report.py").write_text("")
    fake = root / "sizing" / "planted.py"
    fake.write_text("import torch\nfrom ffnlab.training import trainer\n\n\ndef f():\n"
                    "    from ..experiments import report\n")
    found = [m for _, m in imports_of(fake, root)]
    assert found == ["torch", "ffnlab.training.trainer", "ffnlab.experiments.report"]
    assert [layer_of(m) for m in found[1:]] == ["training", "experiments"]
