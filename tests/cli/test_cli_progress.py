"""Progress and where files go: the tokenising bar's total, the final progress line once, the
train start line, the corpus cache folder (and old data_cache/ paths), probe folders.

Oracles: the corpus joined by ``join_documents`` (its length is what tokenising walks through),
the count of lines written, a hand-computed d_ff, environment variables set here.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

from ffnlab.training.progress import Progress

prep = importlib.import_module("ffnlab.training.corpus.prepare")  # the module, not the function


def test_the_final_line_is_written_once_however_often_it_is_reported():
    """A sweep polls every second after its last step until the runs exit: one final line."""
    lines: list[str] = []
    bar = Progress(10, description="sweep", mode="lines", every_s=3600, emit=lines.append)
    for done in range(1, 11):
        bar.update(done, runs="0/2")
    for _ in range(5):
        bar.update(10, runs="2/2")
    bar.close()
    bar.close()
    assert len(lines) == 1 and lines[0].startswith("[sweep] step 10/10 | runs 2/2")


def test_the_eta_follows_work_not_units_when_units_cost_unequal_work(monkeypatch):
    """A sweep whose last steps are its largest model's: half the steps done after 10 s but only a
    tenth of the FLOPs, so 90 s are left (not the 10 s that counting steps would say). A fake
    clock stands in for the wall clock."""
    clock = [0.0]
    monkeypatch.setattr("ffnlab.training.progress.time.perf_counter", lambda: clock[0])
    by_work = Progress(100, mode="off", work_total=1000.0)
    by_units = Progress(100, mode="off")
    clock[0] = 10.0
    by_work.update(50, work=100.0)
    by_units.update(50)
    assert by_work.eta_s() == pytest.approx(90.0) and by_units.eta_s() == pytest.approx(10.0)
    assert by_work.line().endswith("ETA 1:30") and by_work.line().startswith("[] step 50/100")
    resumed = Progress(100, start=50, mode="off", work_total=1000.0, work_start=100.0)  # work before this process
    clock[0] = 20.0
    resumed.update(60, work=400.0)  # 300 more in 10 s: 600 left at 30/s
    assert resumed.eta_s() == pytest.approx(20.0)


def test_a_progress_name_cannot_carry_markup_or_escapes():
    lines: list[str] = []
    bar = Progress(2, description="[link=mailto:a@b]x\x1b[2J\ny", mode="lines", emit=lines.append)
    bar.update(2)
    bar.close()
    assert lines[0].startswith("[[link=mailto:a@b]x\\x1b[2J y] step 2/2")


def _bar_line(monkeypatch, width: int) -> str:
    """The bar's final line as a terminal ``width`` columns wide shows it (a training run's fields)."""
    import io

    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    monkeypatch.setattr("ffnlab.training.progress._stderr_console", lambda: console)
    bar = Progress(300, description="swiglu-r2.67-seed0-d512", tokens_per_unit=16384, mode="bar")
    bar.update(80, loss="3.215 (step 80)", mfu="38.2%", val="3.301 (step 50)")
    bar.close()
    (line,) = [x.rstrip() for x in console.export_text().splitlines() if x.strip()]
    return line


def test_the_bar_line_drops_whole_fields_by_priority_where_rich_cut_them(monkeypatch):
    """At 100 columns rich's columns were each cut with an ellipsis ('80…', 'elapsed 0…'): the
    line keeps its fields whole, leaving out the least important (elapsed, the name) first."""
    line = _bar_line(monkeypatch, 100)
    assert "…" not in line and len(line) <= 100, line
    for whole in ("80/300", "| loss 3.215 (step 80)", "| mfu 38.2%", "| val 3.301 (step 50)", "ETA "):
        assert whole in line, (whole, line)
    assert "elapsed" not in line and "swiglu-r2.67" not in line
    wide = _bar_line(monkeypatch, 200)
    assert wide.startswith("swiglu-r2.67-seed0-d512 ━") and "elapsed 0:00:0" in wide and "…" not in wide
    narrow = _bar_line(monkeypatch, 40)
    assert narrow.startswith("80/300 | loss 3.215 (step 80)") and "ETA " in narrow and len(narrow) <= 40


def test_fit_fields_takes_fields_whole_by_priority():
    from ffnlab.training.progress import fit_fields

    fields = [(3, "name"), (0, "1/2"), (1, "loss 3"), (2, "elapsed 0:00:01")]
    assert fit_fields(fields, 100) == [0, 1, 2, 3]
    assert fit_fields(fields, 15) == [0, 1, 2]  # elapsed (16 wide with its gap) left out, the name fits
    assert fit_fields(fields, 3) == [1]  # the count always stays


def test_the_tokenising_bar_counts_to_exactly_its_total(corpus_dir, tmp_path, monkeypatch):
    """The total counts the separators between documents too (it overshot by them before)."""
    from ffnlab.training.corpus.sources import join_documents, resolve_source

    seen: list[tuple[int, int]] = []

    class Recording(Progress):
        def close(self) -> None:
            seen.append((self.done, self.total))
            super().close()

    monkeypatch.setattr(prep, "Progress", Recording)
    prep.prepare(str(corpus_dir), cache_dir=tmp_path, progress=True)
    texts = resolve_source(str(corpus_dir), "text").load(False)
    want = len(join_documents(texts.train)) + len(join_documents(texts.val))
    assert seen == [(want, want)]


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    (d / "train").mkdir(parents=True)
    (d / "val").mkdir()
    for i in range(3):  # several documents, so there are separators between them
        (d / "train" / f"{i}.txt").write_text(f"Document {i}: the quick brown fox.\nSecond line {i}.\n" * 20)
    (d / "val" / "0.txt").write_text("Held out text about foxes.\n" * 20)
    (d / "val" / "1.txt").write_text("More held out text without a final newline")
    return d


# ---------------------------------------------------------------- the cache folder


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("FFNLAB_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert prep.default_cache_dir() == tmp_path / "home" / ".cache" / "ffnlab"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert prep.default_cache_dir() == tmp_path / "xdg" / "ffnlab"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    assert prep.default_cache_dir() == tmp_path / "home" / ".cache" / "ffnlab"
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "mine"))
    assert prep.default_cache_dir() == tmp_path / "mine"
    assert prep.corpus_cache_dir() == tmp_path / "mine" / "corpora"
    assert prep.corpus_cache_dir(tmp_path / "given") == tmp_path / "given"


def test_prepare_writes_into_the_cache_not_the_working_folder(corpus_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    data = prep.prepare(str(corpus_dir), progress=False)
    assert data.dir.parent == tmp_path / "cache" / "corpora"
    assert list(work.iterdir()) == []


def test_an_old_data_cache_path_still_opens(corpus_dir, tmp_path, monkeypatch):
    """Run and sweep folders written before the move name data_cache/KEY (relative to where they
    ran); once that folder is gone, the same key in the cache is found."""
    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    old = prep.prepare(str(corpus_dir), cache_dir="data_cache", progress=False)
    assert old.dir == Path("data_cache") / old.dir.name
    new = prep.prepare(str(corpus_dir), progress=False)  # the same settings: the same key
    assert new.dir.name == old.dir.name
    shutil.rmtree("data_cache")
    reopened = prep.load_prepared(f"data_cache/{old.dir.name}")
    assert reopened.dir == new.dir and reopened.train_tokens == old.train_tokens
    with pytest.raises(Exception, match="not a complete prepared corpus"):
        prep.load_prepared("data_cache/0123456789abcdef")


def test_a_run_saved_with_the_old_cache_dir_resumes(tmp_path):
    """data.cache_dir says where files live, not what is trained: it may differ on resume."""
    from ffnlab.training import runconfig
    from ffnlab.training.trainer import open_run_dir

    out = tmp_path / "run"
    out.mkdir()
    old = runconfig.load(None, ["data.cache_dir=data_cache"])
    runconfig.save(old, out / "config.yaml")
    assert open_run_dir(out, runconfig.load(None, []), resume=True) is True
    assert runconfig.without_locations(old.to_dict()) == runconfig.without_locations(runconfig.load(None).to_dict())
    with pytest.raises(Exception, match="config differs in train.seed"):
        open_run_dir(out, runconfig.load(None, ["train.seed=7"]), resume=True)


# ---------------------------------------------------------------- probe folders


def test_probe_folder_rules(tmp_path):
    from ffnlab.cli.probe import check_probe_folder
    from ffnlab.errors import FfnlabError

    assert check_probe_folder(tmp_path / "new", overwrite=False) is False
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_probe_folder(empty, overwrite=False) is False
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "probe.json").write_text("{}")
    with pytest.raises(FfnlabError, match="already holds a probe; pass --overwrite"):
        check_probe_folder(earlier, overwrite=False)
    assert check_probe_folder(earlier, overwrite=True) is True
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(FfnlabError, match="not a probe's"):
        check_probe_folder(other, overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(FfnlabError, match="is a file"):
        check_probe_folder(tmp_path / "file", overwrite=True)


# ---------------------------------------------------------------- train says what it trains


def test_train_prints_the_model_size_and_d_ff_when_it_starts(corpus_dir, tmp_path):
    from cli_run import run

    from ffnlab.render import human

    out = tmp_path / "run"
    sets = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "model.ffn.kind=gelu", "model.ffn.rule=ratio",
            "model.ffn.ratio=4", "train.seq_len=16", "train.batch_size=2", "train.max_steps=2",
            "train.warmup_steps=1", "train.eval_every=2", "train.eval_tokens=64", "train.progress=lines",
            "train.tensorboard=false", "train.threads=1", "train.peak_flops=1e11", f"data.corpus={corpus_dir}",
            f"data.cache_dir={tmp_path / 'cache'}"]
    p = run("train", "--out", str(out), *[a for s in sets for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    first = next(line for line in p.stderr.splitlines() if line.startswith("[run] "))
    total = json.loads((out / "summary.json").read_text())["params"]["total"]
    assert f"[run] {human(total)} params" in first
    assert "d_model 32, d_ff 128 (gelu, ratio 4)" in first  # 4 x 32, by hand
    assert "1 layers; 2 steps x 32 tokens" in first  # batch 2 x seq_len 16
    assert sum("step 2/2" in line for line in p.stderr.splitlines()) == 1
    # each metric names the step it was measured at (the line moves on between logs)
    final = next(line for line in p.stderr.splitlines() if "step 2/2" in line)
    assert re.search(r"\| loss [0-9.]+ \(step 2\) \|", final) and re.search(r"\| val [0-9.]+ \(step 2\)", final)


def test_a_line_is_not_repeated_while_nothing_moved_and_counts_each_runs_tokens(monkeypatch):
    """A sweep polls every second; between two logs of its runs the step count stands still, and
    a line then would repeat the last one. Its sizes differ in batch, so tokens/s counts the
    tokens reported, not the first run's tokens per step. A fake clock stands in for the wall clock."""
    clock = [0.0]
    monkeypatch.setattr("ffnlab.training.progress.time.perf_counter", lambda: clock[0])
    lines: list[str] = []
    bar = Progress(100, description="sweep", mode="lines", every_s=10, emit=lines.append,
                   tokens_per_unit=64, tokens_start=1000)
    for t, done, tokens in ((11, 10, 5000), (22, 10, 5000), (33, 10, 5000), (44, 20, 9800)):
        clock[0] = float(t)
        bar.update(done, tokens=tokens, runs="0/2")
    assert [x.split(" | ")[0] for x in lines] == ["[sweep] step 10/100", "[sweep] step 20/100"]
    assert "200 tok/s" in lines[1]  # (9800 - 1000) tokens in 44 s, not 20 steps x 64 tokens


def test_resume_with_a_changed_max_steps_says_why_and_what_to_do(tmp_path):
    """The refusal names the change with both values, why it cannot continue (the schedule) and
    the two ways out; a key without a stated reason still gets the values and the ways out."""
    from ffnlab.errors import FfnlabError
    from ffnlab.training import runconfig
    from ffnlab.training.trainer import open_run_dir

    out = tmp_path / "run"
    out.mkdir()
    runconfig.save(runconfig.load(None, ["train.max_steps=100"]), out / "config.yaml")
    with pytest.raises(FfnlabError) as e:
        open_run_dir(out, runconfig.load(None, ["train.max_steps=200"]), resume=True)
    text = str(e.value)
    assert "train.max_steps 100 -> 200" in text and "learning-rate schedule" in text
    assert "choose another --out" in text and "resume with the saved values" in text
    with pytest.raises(FfnlabError, match=r"model.d_model .* -> 96.*choose another --out") as e:
        open_run_dir(out, runconfig.load(None, ["train.max_steps=100", "model.d_model=96"]), resume=True)
    assert "schedule" not in str(e.value)


def test_train_takes_experts_and_top_k_as_size_does_and_names_them_when_it_starts(corpus_dir, tmp_path):
    """--experts 4 with no --top-k trains top-2 (size's default); the start line names the experts
    and the active parameters, which count_params gives for the same config (the oracle)."""
    from cli_run import run

    from ffnlab.render import human
    from ffnlab.sizing.config import make_config
    from ffnlab.sizing.counting import count_params

    out = tmp_path / "moe"
    sets = ["model.n_layers=1", "model.n_heads=2", "model.ffn.rule=ratio", "model.ffn.ratio=4", "train.seq_len=16",
            "train.batch_size=2", "train.max_steps=2", "train.warmup_steps=1", "train.eval_every=2",
            "train.eval_tokens=64", "train.progress=lines", "train.tensorboard=false", "train.threads=1",
            "train.peak_flops=1e11", f"data.corpus={corpus_dir}", f"data.cache_dir={tmp_path / 'cache'}"]
    p = run("train", "--out", str(out), "--d-model", "32", "--ffn", "swiglu", "--experts", "4",
            *[a for s in sets for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    saved = json.loads((out / "model.json").read_text())["model"]
    assert saved["ffn"]["n_experts"] == 4 and saved["ffn"]["top_k"] == 2
    first = next(line for line in p.stderr.splitlines() if line.startswith("[moe] "))
    params = json.loads((out / "summary.json").read_text())["params"]
    active = params["total"] - params["ffn"] + params["ffn_active"]  # a token's share of the experts
    assert f"4 experts top-2 ({human(active)} active params)" in first
    cfg = make_config(32, 1, 2, 128, kind="swiglu", vocab_size=saved["vocab_size"], n_experts=4, top_k=2,
                      max_positions=saved["max_positions"], norm=saved["norm"], positions=saved["positions"],
                      tied_embeddings=saved["tied_embeddings"])
    assert count_params(cfg).total_active == active


EXPECT = {"loss": "1.234 (step 300)", "mfu": "99.9%", "val": "1.234 (step 300)"}  # as train passes them


def _frames(monkeypatch, width: int) -> list[str]:
    """The bar line of a training run as a terminal ``width`` columns wide draws it: before the
    first step, after step 1 (loss, mfu), at step 150 (val too) and at the end. A fake clock
    gives 24,824 tokens/s."""
    import io

    from rich.console import Console

    from ffnlab.training.progress import _LineColumn

    clock = [0.0]
    monkeypatch.setattr("ffnlab.training.progress.time.perf_counter", lambda: clock[0])
    monkeypatch.setattr("ffnlab.training.progress._stderr_console", lambda: Console(file=io.StringIO(), width=width))
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    bar = Progress(300, description="swiglu", tokens_per_unit=16384, mode="bar", expect=EXPECT)
    frames = []
    for t, done, metrics in ((0.0, 0, {}), (0.66, 1, {"loss": "5.545 (step 1)", "mfu": "31.2%"}),
                             (99.0, 150, {"loss": "2.215 (step 150)", "mfu": "32.2%", "val": "2.301 (step 150)"}),
                             (198.0, 300, {"loss": "1.91 (step 300)", "mfu": "32.3%", "val": "1.929 (step 300)"})):
        clock[0] = t
        bar.update(done, **metrics)
        console.print(_LineColumn(bar)(bar._bar.tasks[0]))
        frames.append(console.export_text(clear=True).rstrip())
    bar.close()
    return frames


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_the_bar_keeps_one_layout_from_its_first_frame(monkeypatch, width):
    """The first frames drew 'swiglu ━━━ 0/300 | 0 tok/s elapsed 0:00:00 ETA ?' and the line then
    became '━━━ 300/300 | loss ... | mfu ... | val ... ETA' at 80 columns: the name and elapsed time
    shown while there was room, left out once the metrics came. Now every frame keeps the same
    fields where they will be (the name, the bar's width, the elapsed time), a field not known yet
    left out: no metrics and no '0 tok/s' before the first step."""
    frames = _frames(monkeypatch, width)
    first, last = frames[0], frames[-1]
    assert "loss" not in first and "tok/s" not in first and first.endswith("ETA ?"), first
    for frame, done in zip(frames, (0, 1, 150, 300), strict=True):
        assert len(frame) <= width and "…" not in frame, frame
        assert frame.startswith("swiglu") == last.startswith("swiglu"), (frame, last)
        assert ("elapsed" in frame) == ("elapsed" in last), (frame, last)
        assert frame.index(f"{done}/300") == last.index("300/300"), (frame, last)  # the name and bar as wide
        # the fields it shows are the last frame's, in the same order
        shown = [f for f in ("| loss", "| mfu", "| val", "tok/s", "ETA") if f in frame]
        assert set(shown) <= {f for f in ("| loss", "| mfu", "| val", "tok/s", "ETA") if f in last}, (frame, last)
        at = [frame.index(f) for f in shown]
        assert at == sorted(at), frame
    assert all(f in last for f in ("| loss 1.91 (step 300)", "| mfu 32.3%", "| val 1.929 (step 300)", "ETA 0:00"))


def test_train_prints_its_start_line_before_the_bar_begins(corpus_dir, tmp_path, monkeypatch, capsys):
    """The bar's first frame was drawn before the run's start line (the line printed above it)."""
    from cli_inproc import run_cli

    import ffnlab.training.trainer as trainer

    events: list[str] = []
    real_progress, real_start_line = trainer.Progress, trainer.start_line

    def progress(*args, **kwargs):
        events.append("bar")
        assert set(kwargs["expect"]) == {"loss", "mfu", "val"}
        return real_progress(*args, **kwargs)

    def start_line(*args, **kwargs):
        events.append("start line")
        return real_start_line(*args, **kwargs)

    monkeypatch.setattr(trainer, "Progress", progress)
    monkeypatch.setattr(trainer, "start_line", start_line)
    sets = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=16", "train.batch_size=2",
            "train.max_steps=2", "train.warmup_steps=1", "train.eval_tokens=64", "train.progress=lines",
            "train.tensorboard=false", "train.threads=1", "train.peak_flops=1e11", f"data.corpus={corpus_dir}",
            f"data.cache_dir={tmp_path / 'cache'}"]
    p = run_cli(capsys, "train", "--out", str(tmp_path / "run"), *[a for s in sets for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    assert events == ["start line", "bar"]
