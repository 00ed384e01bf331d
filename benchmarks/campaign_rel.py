"""An adversarial campaign against ffnlab's folder promises (links, damaged records, interrupted writes).

Unlike tests/cli/test_links.py, which plants the links once reported, this script *discovers* what
each command writes and attacks every one of those paths:

1. One tiny finished sweep on a facts corpus is trained (2 arms x 2 seeds, 4 steps).
2. Each command (sweep, report, report --out, capacity report [--remeasure], probe, train
   --resume, export, a sweep that trains) runs once on a fresh copy; every file and folder it
   created or changed is recorded.
3. For every such path (and every folder on the way to it) a fresh copy gets a symlink to a file
   outside, a dangling symlink, a symlink to a folder outside (a copy of what was there), or a
   hard link to a file outside; the command runs again.
4. Damaged inputs: metrics.jsonl, summary.json, sweep.json, capacity.json and state.json edited
   in ways no earlier test used (types, order, duplicates, torn lines, huge values, BOMs, NUL
   bytes), run through report, capacity report, sweep and train --resume.
5. Hostile text: ANSI/OSC escapes, rich markup, HTML and Markdown syntax in descriptions,
   evidence and folder names; stdout and every page written must hold none of it raw.

Every run must: raise no exception (the CLI runs in this process, so a traceback is an escaped
exception), exit 0, 1 or 2, print exactly one ``error:`` line when it fails (a sweep's progress
lines aside), leave ``outside/`` byte for byte as it was and create nothing at a dangling link's
target. The script prints how many commands it tried and every failure, and exits 1 if any.

    PYTHONPATH=src python benchmarks/campaign_rel.py [--work DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from fuzz_cli import snapshot  # noqa: E402  (what a refusal must leave unchanged)
from tiny_sweep import tiny_spec  # noqa: E402

SPEC = tiny_spec("camp")
RUN, GATED = "g4-s0", "s4-s0"
PROGRESS = re.compile(r"^\[camp\] ")
RAW_BAD = ("\x1b", "\x07", "\x9b")


# ---------------------------------------------------------------- running the CLI in this process


class Outcome:
    def __init__(self, code: int, out: str, err: str, crash: str | None):
        self.code, self.out, self.err, self.crash = code, out, err, crash

    def error_lines(self) -> list[str]:
        return [x for x in self.err.splitlines() if x.strip() and not PROGRESS.match(x)]


class Hang(BaseException):
    """A command that ran past ``HANG_S`` (raised from SIGALRM, which interrupts a blocked read)."""


HANG_S = 300


def _alarm(signum: int, frame: object) -> None:
    raise Hang(f"no answer after {HANG_S} s")


def run_cli(argv: list[str], where: Path) -> Outcome:
    from ffnlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    code, crash = 0, None
    old = os.getcwd()
    os.chdir(where)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(argv))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except Hang as e:
                crash, code = f"hang: {e}", -1
            except BaseException:  # an exception that escaped main: what a user sees as a traceback
                crash = traceback.format_exc(limit=6)
                code = -1
    finally:
        signal.alarm(0)
        os.chdir(old)
    return Outcome(code, out.getvalue(), err.getvalue(), crash)


# ---------------------------------------------------------------- the world


def build_base(work: Path) -> Path:
    base = work / "base"
    if (base / "sweep" / "runs" / GATED / "summary.json").is_file():
        return base
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    spec = json.loads(json.dumps(SPEC))
    spec["base"]["data"]["cache_dir"] = str(work / "cache")
    (base / "spec.yaml").write_text(yaml.safe_dump(spec))
    (base / "text.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 40)
    r = run_cli(["sweep", "spec.yaml", "--out", "sweep", "--no-report"], base)
    if r.code != 0:
        sys.exit(f"could not train the base sweep: {r.err[-2000:]} {r.crash or ''}")
    return base


def fresh(base: Path, scratch: Path) -> Path:
    world = Path(tempfile.mkdtemp(dir=scratch))
    shutil.copytree(base, world / "w", symlinks=True)
    out = world / "outside"
    out.mkdir()
    (out / "sentinel.txt").write_text("sentinel\n")
    return world


def unfinish(w: Path, run: str = RUN) -> None:
    (w / "sweep" / "runs" / run / "summary.json").unlink()


COMMANDS: dict[str, tuple[list[str], Callable[[Path], None] | None]] = {
    "sweep-rerun": (["sweep", "spec.yaml", "--out", "sweep"], None),
    "sweep-trains": (["sweep", "spec.yaml", "--out", "sweep", "--no-report"], unfinish),
    "report": (["report", "sweep"], None),
    "report-out": (["report", "sweep", "--out", "rep"], None),
    "capacity-report": (["capacity", "report", "sweep"], None),
    "capacity-remeasure": (["capacity", "report", "sweep", "--remeasure"], None),
    "probe": (["probe", f"sweep/runs/{RUN}", "--corpus", "text.txt", "--tokens", "256", "--seq-len", "16",
               "--units", "2", "--examples", "1", "--out", "p"], None),
    "train-resume": (["train", f"sweep/configs/{RUN}.yaml", "--out", f"sweep/runs/{RUN}", "--resume",
                      "--set", "train.keep_last=1"], unfinish),
    "export": (["export", f"sweep/runs/{GATED}", "--hf", "hf"], None),
}


# ---------------------------------------------------------------- checks


class Tally:
    def __init__(self) -> None:
        self.tried = Counter[str]()
        self.failures: list[str] = []

    def check(self, family: str, label: str, world: Path, argv: list[str], before: dict,
              ghost: Path | None = None, pages: list[Path] | None = None) -> Outcome:
        self.tried[family] += 1
        if sum(self.tried.values()) % 25 == 0:
            print(f"    {sum(self.tried.values())} tried, {len(self.failures)} failures", flush=True)
        r = run_cli(argv, world / "w")
        problems = []
        if r.crash:
            problems.append("exception escaped: " + r.crash.strip().splitlines()[-1])
        if r.code not in (0, 1, 2, -1):
            problems.append(f"exit {r.code}")
        lines = r.error_lines()
        if r.code in (1, 2) and not (len(lines) == 1 and lines[0].startswith("error: ")):
            problems.append(f"{len(lines)} stderr lines: {lines[:3]}")
        if "Traceback" in r.err + r.out:
            problems.append("traceback printed")
        if snapshot(world / "outside") != before:
            problems.append("outside/ changed")
        if ghost is not None and os.path.lexists(ghost):
            problems.append(f"created {ghost.name} at a dangling link's target")
        if any(c in r.out + "".join(lines) for c in RAW_BAD):
            problems.append("raw escape on the terminal")
        for page in pages or []:
            if page.is_file():
                text = page.read_text(encoding="utf-8", errors="replace")
                if any(c in text for c in RAW_BAD) or "<script>alert" in text or "<img src=x" in text:
                    problems.append(f"raw hostile text in {page.name}")
        if problems:
            self.failures.append(f"[{family}] {label}: {' '.join(argv)} -> exit {r.code}: {'; '.join(problems)}")
        return r


# ---------------------------------------------------------------- 2-3: discover writes, plant links


def written_paths(base: Path, scratch: Path, name: str) -> list[str]:
    argv, prepare = COMMANDS[name]
    world = fresh(base, scratch)
    if prepare:
        prepare(world / "w")
    before = snapshot(world / "w")
    r = run_cli(argv, world / "w")
    if r.code != 0:
        print(f"  (discovery of {name} failed: exit {r.code} {r.err[-300:]} {r.crash or ''})")
    after = snapshot(world / "w")
    changed = {p for p, v in after.items() if before.get(p) != v}
    shutil.rmtree(world, ignore_errors=True)
    paths: set[str] = set()
    for p in changed:
        parts = Path(p).parts
        paths.update(str(Path(*parts[:i])) for i in range(1, len(parts) + 1))
    skip = re.compile(r"(^|/)(\.ffnlab-tmp-|\.ffnlab-old-)")
    kept: dict[str, str] = {}  # one path per shape: runs/g4-s0/... stands for runs/s4-s1/..., step-1 for step-2
    for p in sorted(paths):
        if not skip.search(p):
            kept.setdefault(re.sub(r"[0-9]+", "N", p.replace(GATED.split("-")[0], RUN.split("-")[0])), p)
    return sorted(kept.values())


def plant(world: Path, rel: str, kind: str) -> Path | None:
    """Plant a link of ``kind`` at ``w/rel``; returns the dangling target (to check it stays absent)."""
    at, out = world / "w" / rel, world / "outside"
    was_dir = at.is_dir() and not at.is_symlink()
    if was_dir and kind == "dir-link":
        shutil.copytree(at, out / "dir-copy", symlinks=True)
    if kind == "hard-link" and was_dir:
        return None
    if was_dir:
        shutil.rmtree(at)
    elif os.path.lexists(at):
        at.unlink()
    at.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file-link":
        at.symlink_to(out / "sentinel.txt")
    elif kind == "dangling":
        at.symlink_to(out / "ghost")
        return out / "ghost"
    elif kind == "dir-link":
        if not (out / "dir-copy").exists():
            (out / "dir-copy").mkdir()
        at.symlink_to(out / "dir-copy")
    elif kind == "hard-link":
        os.link(out / "sentinel.txt", at)
    return None


# the folders each command is given: a link *there* (or above) is the user's own path and is followed
NAMED = {"sweep-rerun": ["sweep"], "sweep-trains": ["sweep"], "report": ["sweep"], "report-out": ["rep", "sweep"],
         "capacity-report": ["sweep"], "capacity-remeasure": ["sweep"], "probe": ["p", f"sweep/runs/{RUN}"],
         "train-resume": [f"sweep/runs/{RUN}"], "export": ["hf", f"sweep/runs/{GATED}"]}


def link_campaign(base: Path, scratch: Path, tally: Tally, limit: int | None) -> None:
    for name, (argv, prepare) in COMMANDS.items():
        paths = [p for p in written_paths(base, scratch, name)
                 if not any(n == p or n.startswith(p + "/") for n in NAMED[name])]
        if limit:
            paths = paths[:limit]
        print(f"  {name}: {len(paths)} written paths x 4 link kinds", flush=True)
        for rel in paths:
            for kind in ("file-link", "dangling", "dir-link", "hard-link"):
                world = fresh(base, scratch)
                if prepare:
                    prepare(world / "w")
                ghost = plant(world, rel, kind)
                if kind == "hard-link" and not (world / "w" / rel).exists():
                    shutil.rmtree(world, ignore_errors=True)
                    continue
                tally.check("links", f"{kind} at {rel}", world, argv, snapshot(world / "outside"), ghost)
                shutil.rmtree(world, ignore_errors=True)


# ---------------------------------------------------------------- 4: damaged inputs


def _metrics_edit(fn: Callable[[list[str]], list[str]]) -> Callable[[Path], None]:
    def apply(w: Path) -> None:
        p = w / "sweep" / "runs" / RUN / "metrics.jsonl"
        p.write_text("\n".join(fn(p.read_text().splitlines())) + "\n")
    return apply


def _json_edit(rel: str, fn: Callable[[dict], object]) -> Callable[[Path], None]:
    def apply(w: Path) -> None:
        p = w / rel
        data = json.loads(p.read_text())
        new = fn(data)
        p.write_text(json.dumps(data if new is None else new))
    return apply


def _raw(rel: str, data: bytes) -> Callable[[Path], None]:
    def apply(w: Path) -> None:
        (w / rel).write_bytes(data)
    return apply


def _set(d: dict, key: str, value: object) -> None:
    d[key] = value


def _steps(*steps: Callable[[Path], object]) -> Callable[[Path], None]:
    """The damage of doing ``steps`` in turn (each a path action whose result is unused)."""
    def apply(w: Path) -> None:
        for step in steps:
            step(w)
    return apply


SUMMARY = f"sweep/runs/{RUN}/summary.json"
STATE = f"sweep/runs/{RUN}/checkpoints/step-0000004/state.json"
DAMAGE: dict[str, Callable[[Path], object]] = {
    "metrics: step is a float": _metrics_edit(lambda ls: [ls[0].replace('"step": 1,', '"step": 1.5,', 1), *ls[1:]]),
    "metrics: step is true": _metrics_edit(lambda ls: [ls[0].replace('"step": 1,', '"step": true,', 1), *ls[1:]]),
    "metrics: step is null": _metrics_edit(lambda ls: [ls[0].replace('"step": 1,', '"step": null,', 1), *ls[1:]]),
    "metrics: step 2**70": _metrics_edit(lambda ls: [ls[0].replace('"step": 1,', f'"step": {2**70},', 1), *ls[1:]]),
    "metrics: step -1": _metrics_edit(lambda ls: [ls[0].replace('"step": 1,', '"step": -1,', 1), *ls[1:]]),
    "metrics: lines reversed": _metrics_edit(lambda ls: ls[::-1]),
    "metrics: last line doubled": _metrics_edit(lambda ls: [*ls, ls[-1]]),
    "metrics: an empty line inside": _metrics_edit(lambda ls: [ls[0], "", *ls[1:]]),
    "metrics: a torn line inside": _metrics_edit(lambda ls: [ls[0], ls[1][:20], *ls[2:]]),
    "metrics: a torn last line": _metrics_edit(lambda ls: [*ls, ls[0][:15]]),
    "metrics: a list record": _metrics_edit(lambda ls: ["[1, 2]", *ls]),
    "metrics: kind is a number": _metrics_edit(lambda ls: [ls[0].replace('"kind": "train"', '"kind": 7', 1), *ls[1:]]),
    "metrics: val_loss Infinity": _metrics_edit(lambda ls: [x.replace('"val_loss": ', '"val_loss": Infinity, "x": ', 1)
                                                            for x in ls]),
    "metrics: eval tokens text": _metrics_edit(lambda ls: [x.replace('"kind": "eval", "step": 2, "tokens": ',
                                                                     '"kind": "eval", "step": 2, "tokens": "n", "t": ')
                                                           for x in ls]),
    "metrics: NUL bytes": _raw(f"sweep/runs/{RUN}/metrics.jsonl", b'{"kind": "train", "step": 1}\n\x00\x00\n'),
    "metrics: BOM": _metrics_edit(lambda ls: ["\ufeff" + ls[0], *ls[1:]]),
    "metrics: not UTF-8": _raw(f"sweep/runs/{RUN}/metrics.jsonl", b'{"kind": "tr\xe9in", "step": 1}\n'),
    "metrics: a folder": _steps(lambda w: (w / "sweep/runs" / RUN / "metrics.jsonl").unlink(),
                                lambda w: (w / "sweep/runs" / RUN / "metrics.jsonl").mkdir()),
    "metrics: a FIFO": _steps(lambda w: (w / "sweep/runs" / RUN / "metrics.jsonl").unlink(),
                              lambda w: os.mkfifo(w / "sweep/runs" / RUN / "metrics.jsonl")),
    "summary: a list": _raw(SUMMARY, b"[1]"),
    "summary: final_val_loss text": _json_edit(SUMMARY, lambda d: _set(d, "final_val_loss", "low")),
    "summary: final_val_loss NaN": _raw(SUMMARY, b'{"final_val_loss": NaN, "final_val_bpb": 1, "wall_s": 1}'),
    "summary: steps text": _json_edit(SUMMARY, lambda d: _set(d, "steps", "four")),
    "summary: truncated": lambda w: (w / SUMMARY).write_text((w / SUMMARY).read_text()[:40]),
    "summary: tokens huge": _json_edit(SUMMARY, lambda d: _set(d, "tokens", 10**400)),
    "sweep.json: truncated": lambda w: (w / "sweep/sweep.json").write_text((w / "sweep/sweep.json").read_text()[:300]),
    "sweep.json: runs not a list": _json_edit("sweep/sweep.json", lambda d: _set(d, "runs", {"a": 1})),
    "sweep.json: spec.seeds text": _json_edit("sweep/sweep.json", lambda d: _set(d["spec"], "seeds", "0,1")),
    "sweep.json: spec.base a list": _json_edit("sweep/sweep.json", lambda d: _set(d["spec"], "base", [])),
    "sweep.json: spec.scales bad": _json_edit("sweep/sweep.json", lambda d: _set(d["spec"], "scales",
                                                                                 [{"name": "$\\undefined$"}])),
    "sweep.json: run config not a dict": _json_edit("sweep/sweep.json", lambda d: _set(d["runs"][0], "config", 3)),
    "sweep.json: prepared_data elsewhere": _json_edit("sweep/sweep.json", lambda d: _set(d, "prepared_data", "/nope")),
    "sweep.json: d_model 0": _json_edit("sweep/sweep.json", lambda d: _set(d["runs"][0], "d_model", 0)),
    "sweep.json: run name with markup": _json_edit("sweep/sweep.json", lambda d: _set(d["runs"][0], "run", "[b]x")),
    "capacity.json cache: truncated": lambda w: (w / f"sweep/runs/{RUN}/capacity.json").write_text('{"trained": '),
    "capacity.json cache: bits text": lambda w: (w / f"sweep/runs/{RUN}/capacity.json").write_text(
        '{"trained": {"bits": "x", "fraction": 0, "entropy_bits": 0}, "heldout": {"bits": 0}, '
        '"bits_per_param": 0, "bits_per_param_total": 0, "exposures": 1}'),
    "capacity.json cache: a folder": lambda w: (w / f"sweep/runs/{RUN}/capacity.json").mkdir(),
    "model.json: params missing": _json_edit(f"sweep/runs/{RUN}/model.json", lambda d: d.pop("params")),
    "model.json: a list": _raw(f"sweep/runs/{RUN}/model.json", b"[]"),
    "config.yaml: garbage": _raw(f"sweep/runs/{RUN}/config.yaml", b"model: [\n"),
    "state.json: step text": _json_edit(STATE, lambda d: _set(d, "step", "4")),
    "state.json: optimizer missing": _json_edit(STATE, lambda d: d.pop("optimizer")),
    "checkpoint: model.safetensors empty": _raw(f"sweep/runs/{RUN}/checkpoints/step-0000004/model.safetensors", b""),
    "checkpoint: model.safetensors a folder": _steps(
        lambda w: (w / f"sweep/runs/{RUN}/checkpoints/step-0000004/model.safetensors").unlink(),
        lambda w: (w / f"sweep/runs/{RUN}/checkpoints/step-0000004/model.safetensors").mkdir()),
    "checkpoints: a file": _steps(lambda w: shutil.rmtree(w / f"sweep/runs/{RUN}/checkpoints"),
                                  lambda w: (w / f"sweep/runs/{RUN}/checkpoints").write_text("x")),
    "report: a file where the folder goes": lambda w: (w / "sweep/report").write_text("x"),
    "report/plots: a file": _steps(lambda w: (w / "sweep/report").mkdir(),
                                   lambda w: (w / "sweep/report/.ffnlab-report").write_text(""),
                                   lambda w: (w / "sweep/report/plots").write_text("x")),
    "logs: a file": _steps(lambda w: shutil.rmtree(w / "sweep/logs"), lambda w: (w / "sweep/logs").write_text("x")),
}
DAMAGE_COMMANDS = ["report", "capacity-report", "sweep-rerun", "train-resume", "probe", "export"]


def damage_campaign(base: Path, scratch: Path, tally: Tally) -> None:
    print(f"  {len(DAMAGE)} damaged inputs x {len(DAMAGE_COMMANDS)} commands", flush=True)
    for label, damage in DAMAGE.items():
        for name in DAMAGE_COMMANDS:
            argv, prepare = COMMANDS[name]
            world = fresh(base, scratch)
            if name == "capacity-report":
                run_cli(argv, world / "w")  # a cache to damage
            if prepare:
                prepare(world / "w")
            try:
                damage(world / "w")
            except (OSError, KeyError):  # the damage does not apply to this world (e.g. no summary)
                shutil.rmtree(world, ignore_errors=True)
                continue
            tally.check("damage", label, world, argv, snapshot(world / "outside"))
            shutil.rmtree(world, ignore_errors=True)


# ---------------------------------------------------------------- 5: hostile text


HOSTILE = ["\x1b[2J\x1b[31mred\x1b]8;;http://127.0.0.1/\x07link\x1b]8;;\x07", "[/nope] [link=mailto:a@b]x[/link]",
           "<script>alert(1)</script><img src=x onerror=alert(1)>", "a|b\nc `d` [e](javascript:f) \u202eg",
           "=HYPERLINK(\"http://127.0.0.1\")", "$\\undefined$ {{ 7*7 }} {% raw %}"]


def text_campaign(base: Path, scratch: Path, tally: Tally) -> None:
    print(f"  {len(HOSTILE)} hostile strings x (description, evidence, folder name)", flush=True)
    for i, text in enumerate(HOSTILE):
        world = fresh(base, scratch)

        def describe(d: dict, t: str = text) -> None:
            _set(d["spec"], "description", t)

        _json_edit("sweep/sweep.json", describe)(world / "w")
        before = snapshot(world / "outside")
        tally.check("text", f"description {i}", world, ["report", "sweep"], before,
                    pages=[world / "w/sweep/report/report.md", world / "w/sweep/report/index.html"])
        (world / "w" / "ev.json").write_text(json.dumps({"ratio_optimal": {"verdict": "true", "evidence": text},
                                                          text[:40]: {"verdict": text, "evidence": text}}))
        for fmt in ("table", "markdown", "csv"):
            tally.check("text", f"evidence {i} ({fmt})", world, ["claims", "--evidence", "ev.json", "--format", fmt],
                        before)
        name = "c" + text.replace("/", "_").replace("\x00", "")[:60]
        with contextlib.suppress(OSError):
            (world / "w" / "sweep").rename(world / "w" / name)
            tally.check("text", f"folder name {i}", world, ["capacity", "report", name], before,
                        pages=[world / "w" / name / "capacity-report/report.md",
                               world / "w" / name / "capacity-report/index.html"])
            tally.check("text", f"folder name {i} (report)", world, ["report", name], before,
                        pages=[world / "w" / name / "report/report.md", world / "w" / name / "report/index.html"])
        shutil.rmtree(world, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=None, help="Folder for the base sweep (kept) and scratch copies.")
    ap.add_argument("--limit", type=int, default=None, help="At most N written paths per command (a quick pass).")
    ap.add_argument("--only", choices=["links", "damage", "text"], default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ffnlab-campaign-"))
    work.mkdir(parents=True, exist_ok=True)
    scratch = work / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    t0 = time.perf_counter()
    base = build_base(work)
    tally = Tally()
    for family, fn in (("links", lambda: link_campaign(base, scratch, tally, args.limit)),
                       ("damage", lambda: damage_campaign(base, scratch, tally)),
                       ("text", lambda: text_campaign(base, scratch, tally))):
        if args.only in (None, family):
            print(f"{family}:", flush=True)
            fn()
    total = sum(tally.tried.values())
    print(f"\n{total} commands tried ({', '.join(f'{k} {v}' for k, v in tally.tried.items())}) in "
          f"{time.perf_counter() - t0:.0f} s; {len(tally.failures)} failures")
    for f in tally.failures:
        print("  FAIL", f)
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
