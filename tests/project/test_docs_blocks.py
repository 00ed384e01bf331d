"""The command outputs shown in README.md and docs/ are what the commands print now."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest
from paths import ROOT

spec = importlib.util.spec_from_file_location("docs_blocks", ROOT / "tools" / "docs_blocks.py")
docs_blocks = importlib.util.module_from_spec(spec)
sys.modules["docs_blocks"] = docs_blocks
spec.loader.exec_module(docs_blocks)

FILES = docs_blocks.doc_files()


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shown_output_is_what_the_command_prints(path):
    text = path.read_text()
    assert not docs_blocks.unmarked_commands(text), "a `$ ffnlab` line outside a generated or sample block"
    for m in docs_blocks.BLOCK.finditer(text):
        assert m.group(0) == f"<!-- out: {m['cmd']} -->\n{docs_blocks.render(m['cmd'])}<!-- /out -->", (
            f"{path.name}: `{m['cmd']}` prints something else now; run `make docs`")


def test_the_readme_opens_with_the_two_commands_and_stays_short():
    text = (ROOT / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    assert [line.split()[:2] for line in first_block.splitlines()] == [["make", "demo"], ["make", "test"]]
    assert len(text.encode()) < 17_000
    assert "../shared" not in text and "FINDINGS" not in text
    for target in re.findall(r"\]\(([^)#]+)", text):  # every relative link resolves
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_the_check_catches_a_stale_block_and_a_hand_copied_output(tmp_path):
    stale = ("<!-- out: ffnlab size --d-model 768 --ffn gelu --ratio 4 --format markdown -->\n"
             "| d_ff | 9999 |\n<!-- /out -->\n")
    assert docs_blocks.update_text(stale) != stale
    fresh = docs_blocks.update_text(stale)
    assert "| d_ff | 3072 |" in fresh and docs_blocks.update_text(fresh) == fresh
    copied = "```\n$ ffnlab size --d-model 768\nd_ff 3072\n```\n"
    assert docs_blocks.unmarked_commands(copied) == ["$ ffnlab size --d-model 768"]
    assert docs_blocks.unmarked_commands("<!-- sample: timings -->\n" + copied) == []
    md = tmp_path / "x.md"
    md.write_text(stale)
    assert docs_blocks.main(["--check", str(md)]) == 1 and md.read_text() == stale  # --check never writes
    assert docs_blocks.main([str(md)]) == 0 and md.read_text() == fresh


def test_an_excerpt_keeps_the_selected_lines_of_the_real_output_and_says_so():
    cmd = "ffnlab size --d-model 768 --ffn gelu --ratio 4 --format markdown"
    whole = docs_blocks.run_command(cmd)
    part = docs_blocks.render(f'{cmd} from "| d_ff |" until "| parameter-matched"')
    assert "| d_ff | 3072 |" in part and "| raw ratio" in part and "parameter-matched ratio |" not in part
    assert "lines were left out before and after it" in part
    kept = part.split(")*\n\n", 1)[1]
    assert kept in whole and kept.startswith("| d_ff | 3072 |")  # a contiguous slice of what the command printed
    text = docs_blocks.render('ffnlab size --d-model 768 --ffn gelu --ratio 4 from "│ d_ff"')
    assert text.splitlines()[2] == "[...]" and "d_ff" in text.splitlines()[3]
    with pytest.raises(SystemExit, match="no output line starts with"):
        docs_blocks.render(f'{cmd} from "no such line"')


def test_the_readme_quotes_the_zoo_size() -> None:
    """The README's counts of zoo models are the zoo's (they drifted once: 114 quoted, 122 kept)."""
    import re

    from ffnlab.sizing.zoo import load_zoo

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = {int(n) for n in re.findall(r"(\d+) (?:real models audited|published architectures)", text)}
    assert quoted == {len(load_zoo())}


def test_the_readme_python_example_prints_what_its_comments_say() -> None:
    import contextlib
    import io

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the README's own example
    said = [line.split("# ", 1)[1].split(" (")[0] for line in code.splitlines() if line.startswith("print(")]
    assert out.getvalue().splitlines() == said
