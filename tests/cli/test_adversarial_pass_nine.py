"""A ninth adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at the process around a command (its standard streams, signals, the disk, the
environment) and at inputs the first eight passes left alone; inputs kept as tests.

The pass threw about 350 inputs, each a call of the CLI (in-process, or a subprocess where a
stream, a signal, a full disk or a Hub was the question), recording exit status, stderr lines,
traceback, strict JSON and the files left:

* standard streams (31): stdout closed (``>&-``) for ``zoo``, ``plan``, ``size`` with and without
  ``--json`` and a refused ``size``; stdout ``/dev/full``; stderr closed and ``/dev/full`` for a
  refused ``size`` and a ``--json`` answer; stdin closed; stdout a pipe closed early (``| head -1``,
  ``| head -c 1``, ``| true``) for ``zoo`` (table, ``--json``, csv, markdown), ``fit``,
  ``claims``, ``size``.
* signals (24): SIGINT to ``train`` (0.3 to 12 s in: at import, corpus preparation, training),
  ``train --print-config``, ``report`` (1.5 to 4 s in, then rerun), a sweep.
* a full disk (8, a 8-300 KiB tmpfs): ``train`` (checkpoint, then ``--resume`` once freed),
  its corpus cache (2.3 MB corpus), ``export``, ``size --plot``, ``probe --out``.
* environment (17): COLUMNS 1, 0, -5, abc, " 80", 1e3, 100000, 10**9; NO_COLOR, TERM=dumb, LANG=C
  and PYTHONIOENCODING=ascii over eleven commands; TMPDIR missing, a file, empty (``train``,
  ``size --plot``).
* files read (65): empty YAML/TOML/JSON, ``---``, ``null``, ``[]``, a string, random bytes, a PNG
  header, ``/dev/zero``, ``/dev/null``, ``/dev/urandom``, ``/proc/self/environ``, each to
  ``sweep --estimate``, ``train --print-config``, ``capacity run``, ``claims --evidence``,
  ``verify --preset``.
* run folders of another schema (81, a real 20-step run, each to ``export``, ``generate`` and
  ``train --resume``): state.json format 0/99/"1"/absent, step "20"/-5/999; model.json without a
  key, with an unknown key, ffn null, d_model "32", without ``model``, a list, absent;
  config.yaml with a renamed key, empty, absent; summary.json running/a list; a checkpoint
  without its marker, a file, named ``step-abc`` and ``step-`` + 23 digits, an empty and a cut
  model.safetensors; metrics.jsonl empty; prepared_data gone.
* option values (76): ``--timeout`` nan/inf/-1/0/-0/''/1e400/1e-400/" 5"/5s/U+0665; ``--gpu``
  ESC, U+202E, a newline, NUL, 100,000 characters, '', a trailing space, full-width; model
  targets ESC, a newline, U+202E, 100,000 characters, ``..``, ``/etc/passwd``, ``-``, ``gpt2@ESC``;
  ``--ffn``/``--family`` OSC, CR, TAB; ``--format`` JSON/newline/''/NUL; ``--workers`` 0/-1/nan/
  1e9/''; options twice, ``--d-model=``, ``--``, abbreviations, ``-h`` beside a bad value.
* empty and undecodable paths (21): ``""`` as the target of ``audit``, ``table``, ``size --from``,
  ``fit``, ``probe``, ``export``, ``report``, ``sweep`` and as ``--out``/``--hf`` of ``train``,
  ``sweep``, ``report``, ``probe``, ``capacity report``, ``export`` (with ``--overwrite``, in a
  user's folder and in an earlier export); names of bytes that are not UTF-8 (``$'\\xff'``) to
  ``audit``, ``size --plot``, ``export --hf``, ``sweep --out``, ``report``.
* link loops (10): ``loop -> loop`` and ``a -> b -> a`` as ``size --plot loop/x.svg`` and ``a``,
  ``export --hf loop`` and ``loop/x``, ``report --out loop``, ``sweep --out loop/x``, ``train --out
  loop`` (``--print-config``) and ``loop/r``, ``audit loop``, ``claims --evidence loop``.
* concurrency (4): two ``report SW --out rr`` at once (3 rounds), two ``sweep`` on one new --out.
* the Hub (16, a server on 127.0.0.1 of the pass's own): a 2 MB header, 100,000 headers, a chain
  of redirects to new paths, a 302 without Location, Content-Length ``abc``, HTTP/1.0 without a
  length, a JSON list, a 5,000-digit number, a 60 KB X-Error-Message, ``Content-Encoding: gzip``
  over plain bytes, ``text/html; charset=utf-16``, UTF-16 and Latin-1 bodies, headers trickled
  one every 0.5 s, 100 Continue every 0.5 s, a body trickled a byte every 0.3 s.

Findings (9 root causes; each a strict xfail below):

1. Typer's ``_main`` and rich's console catch what ``cli.main``'s own handlers are written for:
   a reader that goes away (``ffnlab zoo | head -1``, ``fit ... | head -1``, ``zoo --json | true``)
   ends with exit 1 (typer: ``sys.exit(1)`` on EPIPE; rich: ``Console.on_broken_pipe`` raises
   ``SystemExit(1)``), the status of a "no" answer, where ``_stdout_closed`` says 141 (a script with
   ``pipefail`` reads "does not fit"); a Ctrl-C inside a command (``report`` 1.5 s in, ``train
   --print-config`` 1 s in) becomes ``Exit(130)``, returned as a status: exit 130 with no
   ``interrupted`` line, which ``main`` promises.
2. ``cli.main`` assumes its standard streams: with stdout closed (``ffnlab size --d-model 256
   --ratio 4 >&-``) ``sys.stdout`` is None, and ``render.table_width``/``emit_json`` fail with an
   AttributeError traceback, exit 1; with stderr unwritable (``2>/dev/full``) a refused command
   exits 1 (``_error``'s print raises inside the handler), not 2; with stderr closed the error line
   is printed to stdout (``print(file=None)``), where a ``--json`` reader expects JSON or nothing.
3. A Ctrl-C that lands in a finalizer is swallowed outside training: ``report`` 3.0 s in printed
   "Exception ignored ... KeyboardInterrupt" with a traceback, wrote the whole report and exited 0.
   ``training/interrupt.py`` ``stop_between_steps`` handles this class for ``train`` only.
4. A write that fails for a full disk names nothing: ``size --plot p.svg``, ``probe --out p`` and
   the corpus cache of ``train`` (``data.cache_dir`` on a full disk) end "error: [Errno 28] No
   space left on device", and stdout on /dev/full the same: the line says neither what nor where
   (``files.write_atomic`` lets the OSError out without a filename and ``main`` prints
   ``str(e)``). ``train``'s checkpoint and ``export`` name theirs ("cannot write checkpoint
   run/checkpoints/step-0000020 (... No space left on device ...); no checkpoint yet: free space
   and rerun with --resume"; --resume then finished the run).
5. ``probe --out p`` whose write fails (a full disk) leaves ``p/``, the folder it made
   (``experiments/reporting/probe.py`` ``write``: ``make_dir`` then two ``write_atomic``, no
   ``provisional_dir``); a refused probe leaves nothing otherwise (the eighth pass's mend 7).
6. An empty path is read as the working folder (``Path("")`` is ``.``): ``audit ""``, ``table
   ""``, ``size --from ""`` and ``fit ""`` answer exit 0 about ``./config.json``, a model nobody
   named (``ffnlab audit "$MODEL"`` with MODEL unset); ``train --out ""``, ``sweep --out ""`` and
   ``report SW --out ""`` write into the working folder; ``export RUN --hf ""`` is "error: Device or
   resource busy: .ffnlab-tmp-PID-HEX", naming its own temporary (nothing lost, with or without
   ``--overwrite``). ``mkdir ""`` and ``cp x ""`` refuse an empty name.
7. A long value is quoted whole in the error line: ``fit gpt2 --gpus 1 --gpu A`` with 100,000
   characters is a 100 KB line ("unknown accelerator 'aaaa..."), ``audit``/``table`` of a
   100,000-character target "File name too long: xxxx..." (100 KB). The first and fifth passes
   bounded such lines for arm names and long numbers only.
8. A folder name of bytes that are not UTF-8 (``sweep s.yaml --out $'\\xfd'``): the sweep writes
   sweep.json, configs and runs, then the worker's log line (``experiments/sweep/run.py``
   ``Workers.run``: ``f.write(f"$ {' '.join(cmd)}")``) raises UnicodeEncodeError (surrogates
   not allowed): a 46-line traceback, exit 1, the sweep left unfinished. (``audit``, ``size
   --plot``, ``export --hf`` and ``report`` take such names.)
9. Two ``report SW --out rr`` at once: one is refused "rr holds files that are not an ffnlab
   report (.ffnlab-tmp-.ffnlab-report-PID-HEX); choose another --out", the other's live temporary
   named as a stranger's file (2 of 3 rounds; both wrote in the third). ``train`` and ``sweep``
   say "another ffnlab ... is running". Safe (nothing lost), but the line misleads.

Noted, not broken promises: a Hub that trickles its headers (one every 0.5 s for 40 s) or 100
Continue lines holds ``--timeout 2`` for as long as bytes come ("up to 2 s to connect or between
bytes", as the waiting line says), then one line; the other Hub answers were one line each, none
retried (a redirect chain stops after 20 requests as a loop); a config.json the Hub sent as a
list, UTF-16 or Latin-1 is refused naming the cached file. An interrupted ``report`` leaves its
folder holding only ``.ffnlab-report`` (the rerun completes it). ``train`` interrupted is exit 130
with the checkpoint to resume from, the .lock gone; on a full disk it names the checkpoint. COLUMNS
of any value, LANG=C, PYTHONIOENCODING=ascii (ASCII boxes), NO_COLOR, odd TMPDIR: all fine. Empty
and binary spec files, device files and damaged run folders: one line each (``model.json``
without ``model`` reads "is corrupt ("'model'")", terse); an empty train config is the defaults.
``claims --evidence ""`` printed the built-in evidence (now refused with every empty path, finding
6). Link loops are refused in one line each, nothing written, some tersely: ``export --hf loop/x``
is "File exists: loop", ``export --hf loop`` advises naming the link's target (the loop itself),
``size --plot loop/x.svg`` "the folder 'loop' does not exist". ``--json`` answers were strict;
refusals printed nothing on stdout.

Every finding runs here in-process or as a short subprocess of a sizing command (the non-UTF-8
sweep, once mended, is a subprocess that trains its one step, the file's slowest test).
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from adversarial_cli import SRC
from adversarial_cli import strict_json as _strict
from fuzz_cli import assert_refused, cli

LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048}


def _python(code: str, where: Path, shell_redirect: str = "", **kw) -> subprocess.CompletedProcess:
    """``python -c CODE`` in ``where`` with this checkout's src, optionally under a shell redirection."""
    env = {**os.environ, "PYTHONPATH": SRC}
    if shell_redirect:
        return subprocess.run(f"{sys.executable} -c '{code}' {shell_redirect}", shell=True, cwd=where, env=env,
                              capture_output=True, text=True, timeout=120, **kw)
    return subprocess.run([sys.executable, "-c", code], cwd=where, env=env, capture_output=True, text=True,
                          timeout=120, **kw)


class _GoneReader(io.StringIO):
    """stdout whose reader went away: every write is EPIPE."""

    def write(self, s: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


# -- 1. typer and rich catch EPIPE and Ctrl-C before cli.main does ---------------------------------

@pytest.mark.parametrize("argv", [["zoo"], ["zoo", "--json"], ["fit", "llama-3-8b", "--gpus", "1"]],
                         ids=["table", "json", "fit"])
def test_a_reader_that_goes_away_is_not_the_no_answer(monkeypatch, argv):
    from ffnlab.cli import main

    monkeypatch.setattr(sys, "stdout", _GoneReader())
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code != 1, "exit 1 is the 'nothing fits' answer"  # cli.main's _stdout_closed says 141
    assert e.value.code == 141


def test_ctrl_c_inside_a_command_says_interrupted(monkeypatch):
    import ffnlab.render as render
    from ffnlab.cli import main

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    err = io.StringIO()
    monkeypatch.setattr(render, "emit_json", interrupted)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as e:
        main(["size", "--d-model", "256", "--ratio", "4", "--json"])
    assert e.value.code == 130  # holds
    assert err.getvalue() == "interrupted\n", repr(err.getvalue())  # was: '' (a silent 130)


@pytest.mark.parametrize("argv", [["size", "--d-model", "256", "--ratio", "4"], ["plan", "125M"], ["claims"],
                                  ["zoo", "--format", "csv"], ["explain", "--d-model", "4096", "--d-ff", "11008"]],
                         ids=["size", "plan", "claims", "csv", "explain"])
def test_a_reader_that_goes_away_from_other_commands(monkeypatch, argv):
    """Neighbours of the above: rich tables, plain lines and CSV all end with the broken-pipe status."""
    from ffnlab.cli import main

    monkeypatch.setattr(sys, "stdout", _GoneReader())
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 141


@pytest.mark.parametrize("args", [["zoo"], ["--help"], ["size", "--help"]], ids=["zoo", "help", "size-help"])
def test_a_real_pipe_with_no_reader_is_the_broken_pipe_status(tmp_path, args):
    """A real pipe whose reading end is closed before ffnlab starts: every write is EPIPE (Python
    ignores SIGPIPE). ``--help`` is printed by typer's own rich console, whose broken pipe is
    ``SystemExit(1)``."""
    read, write = os.pipe()
    os.close(read)
    try:
        p = subprocess.run([sys.executable, "-m", "ffnlab", *args], cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC},
                           stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert p.returncode == 141 and p.stderr == "", (p.returncode, p.stderr[-1500:])


def test_a_command_that_answers_no_keeps_its_status(tmp_path):
    """The other side of the broken-pipe status: a command's own ``typer.Exit`` status ("nothing
    fits": 1) still comes out of main, now that main runs the command itself."""
    # 70B parameters are 140 GB as bf16 weights alone; an L4 holds 24 GB
    r = cli("fit", "llama-3-70b", "--gpus", "1", "--gpu", "L4", "--json", where=tmp_path)
    assert r.code == 1, (r.code, r.stderr[-500:])
    assert isinstance(json.loads(r.stdout), dict)


def test_ctrl_c_inside_a_table_command_says_interrupted(monkeypatch):
    import ffnlab.render as render
    from ffnlab.cli import main

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    err = io.StringIO()
    monkeypatch.setattr(render, "print_table", interrupted)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as e:
        main(["zoo", "--family", "llama"])
    assert (e.value.code, err.getvalue()) == (130, "interrupted\n")


# -- 2. cli.main assumes its standard streams ---------------------------------------------------------

RUN = "import sys; from ffnlab.cli import main; sys.argv = [\"ffnlab\", {args}]; main()"


@pytest.mark.parametrize("args", ['"size", "--d-model", "256", "--ratio", "4"',
                                  '"size", "--d-model", "256", "--ratio", "4", "--json"'], ids=["table", "json"])
def test_stdout_closed_is_not_a_traceback(tmp_path, args):
    p = _python(RUN.format(args=args), tmp_path, ">&-")
    assert "Traceback" not in p.stderr, p.stderr[-1500:]  # was: AttributeError: 'NoneType' object has no ...
    assert p.returncode != 1, (p.returncode, p.stderr[-500:])


def test_a_refusal_with_stderr_on_a_full_disk_still_exits_2(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-c", RUN.format(args='"size", "--d-model", "-1", "--ratio", "4"')],
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC}, stdout=subprocess.PIPE,
                           stderr=full, text=True, timeout=120)
    assert p.returncode == 2, p.returncode  # was: 1


def test_a_refusal_with_stderr_closed_still_exits_2(tmp_path):
    p = _python(RUN.format(args='"size", "--d-model", "-1", "--ratio", "4", "--json"'), tmp_path, "2>&-")
    assert p.returncode == 2, p.returncode


def test_a_refusal_with_stderr_closed_writes_nothing_to_stdout(tmp_path):
    p = _python(RUN.format(args='"size", "--d-model", "-1", "--ratio", "4", "--json"'), tmp_path, "2>&-")
    assert p.stdout == "", p.stdout  # was: "error: --d-model (d_model) must be an integer in [1, 2**30], got -1"


@pytest.mark.parametrize("args", ['"zoo"', '"plan", "125M", "--json"', '"size", "--d-model", "-1", "--ratio", "4"'],
                         ids=["zoo", "plan-json", "refused"])
def test_stdout_closed_is_one_line_and_exit_2(tmp_path, args):
    """Neighbours: a closed stdout is a refusal like a full one (one line, exit 2), whatever the
    command would have printed; a refusal with stdout closed is still its own line."""
    p = _python(RUN.format(args=args), tmp_path, ">&-")
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), p.stderr[-1500:]
    if "-1" not in args:
        assert "standard output is closed" in lines[0], lines


class _FullDisk(io.StringIO):
    """stderr on a full disk: every write is ENOSPC."""

    def write(self, s: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("argv, code", [(["size", "--d-model", "x"], 2), (["audit", "no-such-model"], 2),
                                        (["size", "--d-model", "256", "--ratio", "4", "--nonsense"], 2)],
                         ids=["bad-value", "unknown-model", "unknown-option"])
def test_a_refusal_keeps_its_status_when_stderr_cannot_be_written(monkeypatch, argv, code):
    """In process, the refusals of click (a usage error) and of ffnlab (FfnlabError) alike."""
    from ffnlab.cli import main

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", _FullDisk())
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert (e.value.code, out.getvalue()) == (code, "")


def test_ctrl_c_with_stderr_closed_still_exits_130_and_prints_nothing(monkeypatch):
    import ffnlab.render as render
    from ffnlab.cli import main

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    out = io.StringIO()
    monkeypatch.setattr(render, "emit_json", interrupted)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", None)
    with pytest.raises(SystemExit) as e:
        main(["size", "--d-model", "256", "--ratio", "4", "--json"])
    assert (e.value.code, out.getvalue()) == (130, "")  # not "interrupted" on stdout


# -- 3. a Ctrl-C swallowed by a finalizer ---------------------------------------------------------------

SWALLOWED = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal gives it (a background job ignores SIGINT)
import ffnlab.render as render
emit = render.emit_json
class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, arriving while a finalizer runs
        sum(range(100000))
def emit_json(*a, **k):
    Finalized()
    return emit(*a, **k)
render.emit_json = emit_json
sys.argv = ["ffnlab", "size", "--d-model", "256", "--ratio", "4", "--json"]
from ffnlab.cli import main
main()
"""


def test_a_ctrl_c_during_a_finalizer_is_not_swallowed(tmp_path):
    p = subprocess.run([sys.executable, "-c", SWALLOWED], cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC},
                       capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr[-1500:]
    assert p.returncode in (130, -2), p.returncode  # was: 0, the output complete, as if no Ctrl-C came


DROPPED_IN_A_WRITE = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import builtins
import ffnlab.files as files
real = builtins.open
class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, arriving while a finalizer runs
        sum(range(100000))
def opener(file, mode="r", *a, **k):
    if "x" in mode and "b" in mode:  # the data file of an atomic write: its temporary folder exists
        Finalized()
    return real(file, mode, *a, **k)
files.open = opener
sys.argv = ["ffnlab", *sys.argv[1:]]
from ffnlab.cli import main
main()
"""


@pytest.mark.parametrize("args", [["size", "--d-model", "256", "--ratio", "4", "--n-layers", "2", "--plot", "p.svg"],
                                  ["size", "--d-model", "256", "--ratio", "4", "--n-layers", "2", "--plot", "p.png"]],
                         ids=["svg", "png"])
def test_a_ctrl_c_dropped_inside_a_write_stops_the_command(tmp_path, args):
    """A command that writes a file: the Ctrl-C a finalizer dropped while the file was being made
    stops it before the file is committed; its temporary folder goes, nothing is left."""
    (tmp_path / "w").mkdir()
    p = subprocess.run([sys.executable, "-c", DROPPED_IN_A_WRITE, *args], cwd=tmp_path / "w",
                       env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stderr) == (130, "interrupted\n"), p.stderr[-1500:]
    assert os.listdir(tmp_path / "w") == []  # was: exit 0, the plot written


# -- 4. and 5. a full disk -----------------------------------------------------------------------------

def _full_disk(monkeypatch) -> None:
    """Every file ffnlab.files writes through a temporary fails as on a full disk (ENOSPC, no filename)."""
    import builtins

    import ffnlab.files as files

    real = builtins.open

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def opener(file, mode="r", *a, **k):
        fh = real(file, mode, *a, **k)
        return Full(fh) if "x" in mode and "b" in mode and Path(file).name == "data" else fh

    monkeypatch.setattr(files, "open", opener, raising=False)


def test_a_full_disk_line_names_what_could_not_be_written(tmp_path, monkeypatch):
    _full_disk(monkeypatch)
    r = cli("size", "--d-model", "256", "--ratio", "4", "--n-layers", "2", "--plot", "p.svg", where=tmp_path)
    line = assert_refused(r, "No space left on device")  # holds: one line, exit 2, the temporary removed
    assert os.listdir(tmp_path) == []
    assert "p.svg" in line, line  # was: "error: [Errno 28] No space left on device"
    assert ".ffnlab-tmp-" not in line, line


def test_a_full_disk_replacing_a_file_keeps_the_old_one_and_names_it(tmp_path, monkeypatch):
    from ffnlab.files import write_atomic

    (tmp_path / "old.json").write_bytes(b"old bytes")
    _full_disk(monkeypatch)
    with pytest.raises(OSError) as e:  # still an OSError to callers that clean up after one
        write_atomic(tmp_path / "old.json", "new")
    assert e.value.errno == errno.ENOSPC
    assert str(tmp_path / "old.json") in str(e.value) and "No space left on device" in str(e.value), str(e.value)
    assert (tmp_path / "old.json").read_bytes() == b"old bytes"
    assert os.listdir(tmp_path) == ["old.json"]


def test_a_write_into_a_folder_that_is_gone_names_the_folder_not_the_temporary(tmp_path):
    from ffnlab.errors import FfnlabError
    from ffnlab.files import write_atomic

    with pytest.raises(FfnlabError) as e:
        write_atomic(tmp_path / "gone" / "x.json", "{}")
    assert str(tmp_path / "gone") in str(e.value) and ".ffnlab-tmp-" not in str(e.value), str(e.value)
    assert os.listdir(tmp_path) == []


def test_a_full_disk_appending_to_a_log_names_the_log(tmp_path, monkeypatch):
    import ffnlab.files as files

    real = files.open_append

    class Full(io.StringIO):
        def write(self, s):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "open_append", lambda path, root=None: (real(path, root).close(), Full())[1])
    with pytest.raises(OSError) as e:
        files.append_text(tmp_path / "metrics.jsonl", "{}\n")
    assert e.value.errno == errno.ENOSPC and str(tmp_path / "metrics.jsonl") in str(e.value), str(e.value)


def test_a_full_disk_while_a_corpus_is_prepared_names_the_cache_folder(tmp_path, monkeypatch):
    import importlib

    from adversarial_cli import write_corpus

    from ffnlab.errors import FfnlabError

    prep = importlib.import_module("ffnlab.training.corpus.prepare")  # the module, not the package's function

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(prep, "write_tokens", full)  # the token files: a write() naming no file
    corpus = write_corpus(tmp_path)
    with pytest.raises(FfnlabError) as e:
        prep.prepare(str(corpus), cache_dir=tmp_path / "cache", progress=False)
    line = str(e.value)
    assert "No space left on device" in line and "prepared corpus" in line, line
    assert str(tmp_path / "cache") in line and ".ffnlab-tmp-" not in line, line
    assert os.listdir(tmp_path / "cache") == []  # the temporary removed


ZERO_LAYER = {
    "layer": 0,
    "summary": {"d_ff": 86, "gated": True, "positions": 64, "mean_fire_rate": 0.5, "median_fire_rate": 0.5,
                "dead_units": 0, "always_on_units": 0, "mean_abs_coefficient": 0.1, "value_entropy_bits_mean": 1.0,
                "value_entropy_bits_max": 8.0, "value_top_mass_mean": 0.5, "value_top_k": 1,
                "top_examples_up_negative_share": 0.0, "top_examples_mean_gate_act": 0.1, "top_examples_mean_up": 0.1},
    "units": [{"unit": 0, "max_coefficient": 0.2, "fire_rate": 0.5, "mean_abs_coefficient": 0.1,
               "examples": [{"position": 0, "coefficient": 0.2, "before": "", "trigger": "R", "after": "OMEO",
                             "gate_act": 0.1, "up": 0.1}],
               "promotes": [{"token": "a", "id": 97, "logit": 1.0}],
               "suppresses": [{"token": "b", "id": 98, "logit": -1.0}],
               "value_entropy_bits": 1.0, "value_top_mass": 0.5}],
    "fire_rate_histogram": [0, 0, 0, 0, 0, 86, 0, 0, 0, 0],
}


def _probe_result():
    from ffnlab.training.probe import ProbeResult

    return ProbeResult(model="m", kind="LlamaForCausalLM (llama-style MLP)", tokenizer="byte", tokens=64,
                       windows=2, seq_len=32, n_layers=1, layers=[ZERO_LAYER], method="m", corpus="c.txt (val)")


def test_a_probe_that_cannot_write_leaves_no_folder(tmp_path, monkeypatch):
    from ffnlab.experiments.reporting.probe import write

    _full_disk(monkeypatch)
    with pytest.raises(OSError) as e:
        write(_probe_result(), tmp_path / "p")
    assert not (tmp_path / "p").exists(), os.listdir(tmp_path / "p")  # was: an empty p/ left behind
    assert str(tmp_path / "p" / "probe.json") in str(e.value), str(e.value)  # finding 4: names the file


def test_a_probe_that_cannot_write_leaves_none_of_the_folders_it_made(tmp_path, monkeypatch):
    from ffnlab.experiments.reporting.probe import write

    _full_disk(monkeypatch)
    with pytest.raises(OSError):
        write(_probe_result(), tmp_path / "new" / "deeper" / "p")
    assert os.listdir(tmp_path) == []


def test_a_probe_that_fails_on_its_second_file_removes_its_first(tmp_path, monkeypatch):
    import ffnlab.files as files
    from ffnlab.experiments.reporting.probe import write

    real = files.write_atomic

    def second_fails(path, data, **k):
        if Path(path).name == "index.html":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, **k)

    monkeypatch.setattr("ffnlab.experiments.reporting.probe.write_atomic", second_fails)
    with pytest.raises(OSError):
        write(_probe_result(), tmp_path / "p")
    assert os.listdir(tmp_path) == []  # probe.json was written, then removed with its folder


def test_a_failed_probe_keeps_a_folder_another_process_wrote_in(tmp_path, monkeypatch):
    from ffnlab.experiments.reporting.probe import write

    write_calls: list = []

    def stranger_then_full(path, data, **k):
        (tmp_path / "new" / "theirs.txt").write_text("another process's file")  # appears meanwhile
        write_calls.append(path)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("ffnlab.experiments.reporting.probe.write_atomic", stranger_then_full)
    with pytest.raises(OSError):
        write(_probe_result(), tmp_path / "new" / "p")
    assert write_calls
    assert os.listdir(tmp_path / "new") == ["theirs.txt"]  # the empty p/ it made went; new/ and their file stay
    assert (tmp_path / "new" / "theirs.txt").read_text() == "another process's file"


def test_a_failed_probe_into_an_existing_folder_leaves_the_folder(tmp_path, monkeypatch):
    from ffnlab.experiments.reporting.probe import write

    (tmp_path / "p").mkdir()
    _full_disk(monkeypatch)
    with pytest.raises(OSError):
        write(_probe_result(), tmp_path / "p")
    assert (tmp_path / "p").is_dir() and os.listdir(tmp_path / "p") == []  # the user's folder, as it was


# -- 6. an empty path is the working folder -------------------------------------------------------------

@pytest.mark.parametrize("argv", [["audit", ""], ["table", ""], ["size", "--from", ""], ["fit", "", "--gpus", "1"]],
                         ids=["audit", "table", "size-from", "fit"])
def test_an_empty_model_target_is_refused(tmp_path, argv):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    assert_refused(cli(*argv, "--json", where=tmp_path))  # was: exit 0, ./config.json audited


def test_an_empty_out_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "w").mkdir()
    r = cli("train", "--out", "", "--corpus", "c.txt", "--set", "train.max_steps=1", where=tmp_path / "w")
    # a missing corpus: refused either way; the question is which line comes first
    line = assert_refused(r)
    assert "out" in line.lower(), line  # was: "... c.txt ..." - the empty folder name went unremarked
    assert os.listdir(tmp_path / "w") == []


@pytest.mark.parametrize("argv, option", [
    (["sweep", "s.yaml", "--out", ""], "--out"),
    (["report", "sw", "--out", ""], "--out"),
    (["export", "run", "--hf", ""], "--hf"),
    (["capacity", "report", "sw", "--out", ""], "--out"),
    (["probe", "run", "--out", ""], "--out"),
    (["size", "--d-model", "256", "--ratio", "4", "--plot", ""], "--plot"),
    (["claims", "--evidence", ""], "--evidence"),
    (["sweep", "", "--estimate"], "spec"),
    (["report", ""], "sweep_dir"),
], ids=["sweep-out", "report-out", "export-hf", "capacity-out", "probe-out", "plot", "evidence", "spec", "report"])
def test_an_empty_path_is_refused_naming_the_option(tmp_path, argv, option):
    (tmp_path / "w").mkdir()
    line = assert_refused(cli(*argv, where=tmp_path / "w"), "empty")
    assert option.lower() in line.lower(), line
    assert os.listdir(tmp_path / "w") == []


@pytest.mark.parametrize("argv", [["probe", "", "--out", "p"], ["fit", "gpt2", "", "--gpus", "1", "--gpu", "H100"]],
                         ids=["probe", "fit-second"])
def test_an_empty_model_target_anywhere_is_refused(tmp_path, argv):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    assert_refused(cli(*argv, where=tmp_path), "empty")
    assert os.listdir(tmp_path) == ["config.json"]


def test_a_path_that_is_only_a_dot_is_still_the_working_folder(tmp_path):
    """'.' is a name the user wrote: only the empty string is refused."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    r = cli("audit", "./config.json", "--json", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]


# -- 7. a long value quoted whole ---------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["fit", "gpt2", "--gpus", "1", "--gpu", "a" * 100_000],
                                  ["audit", "x" * 100_000], ["table", "x" * 100_000]], ids=["gpu", "audit", "table"])
def test_a_long_value_is_not_quoted_whole(tmp_path, argv):
    line = assert_refused(cli(*argv, "--json", where=tmp_path))
    assert len(line) < 2000, len(line)
    assert "100,000 characters" in line, line  # cut, saying how long the value was


LONG = "a" * 100_000


@pytest.mark.parametrize("argv", [
    ["size", "--d-model", "256", "--ratio", "4", "--ffn", LONG],
    ["zoo", "--family", LONG],
    ["size", "--d-model", "256", "--ratio", "4", "--format", LONG],
    ["size", "--d-model", "256", "--ratio", "4", "--rule", LONG],
    ["audit", "x/" * 50_000 + "config.json"],
    ["size", "--d-model", "256", "--ratio", "4", "--plot", "d/" * 50_000 + "p.svg"],
    ["fit", "gpt2", "--gpus", "1", "--gpu", "\x1b" * 50_000],
], ids=["ffn", "family", "format", "rule", "long-path", "plot-path", "escapes"])
def test_a_long_value_anywhere_is_a_short_line(tmp_path, argv):
    line = assert_refused(cli(*argv, where=tmp_path))
    assert len(line) < 2000, (len(line), line[:300])
    assert os.listdir(tmp_path) == []


def test_an_unknown_name_under_the_file_name_limit_is_cut_too(tmp_path):
    name = "q" * 250  # a name a file system takes: no "File name too long"; the zoo does not know it
    line = assert_refused(cli("audit", name, "--json", where=tmp_path), "unknown model")
    assert name not in line and "250 characters" in line, line


def test_clip_keeps_a_short_value_whole_and_says_the_length_of_a_long_one():
    from ffnlab.validation import clip, show

    assert clip("H100") == "H100" and show("H100") == "'H100'"
    cut = clip("b" * 12345)
    assert cut.startswith("b" * 100) and cut.endswith("... (12,345 characters)") and len(cut) < 250
    assert show("c" * 12345).endswith("... (12,345 characters)") and len(show("c" * 12345)) < 100


# -- 8. a folder name that is not UTF-8 ----------------------------------------------------------------

SPEC = ("name: s\ncontrol: fixed-d-model\nseeds: [0]\nbase: {model: {d_model: 32, n_layers: 1, n_heads: 2}, "
        "data: {corpus: c.txt, cache_dir: cache, tokenizer: byte}, train: {seq_len: 32, batch_size: 4, max_steps: 1, "
        "tensorboard: false, progress: 'off', threads: 1}}\narms: [{name: a, ffn: {kind: gelu, rule: ratio, "
        "ratio: 2}}]\n")


@pytest.mark.slow
def test_a_sweep_into_a_folder_named_by_bytes_that_are_not_utf8(tmp_path):
    from adversarial_cli import write_corpus

    write_corpus(tmp_path)
    (tmp_path / "s.yaml").write_text(SPEC)
    out = os.fsdecode(b"\xfd")  # what Python makes of a shell's $'\xfd'
    p = subprocess.run([sys.executable, "-m", "ffnlab", "sweep", "s.yaml", "--out", out, "--workers", "1"],
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC, "PYTHONIOENCODING": "utf-8"},
                       capture_output=True, text=True, timeout=300)  # stdout strict UTF-8, as in a UTF-8 locale
    assert "Traceback" not in p.stderr, p.stderr[-1500:]  # was: UnicodeEncodeError: surrogates not allowed
    assert p.returncode in (0, 2), p.returncode
    if p.returncode == 0:  # handled as audit, size --plot, export --hf and report handle such names
        assert "\\xfd: 1 run(s) trained" in p.stdout, p.stdout  # the byte shown, not a raw byte or \udcfd
        logs = [f for f in (tmp_path / out).rglob("*.log")]
        assert logs and any(b"--out \xfd/" in f.read_bytes() for f in logs)  # the command as run, byte for byte


def test_a_name_that_is_not_utf8_is_shown_as_its_bytes():
    from ffnlab.escape import markdown, one_line, terminal

    name = os.fsdecode(b"run-\xfd\xff")  # what Python makes of $'run-\xfd\xff'
    for shown in (terminal(name), one_line(name)):
        assert shown == "run-\\xfd\\xff", shown
        shown.encode("utf-8")  # printable on any UTF-8 stream (a lone surrogate is not)
    assert markdown(name) == "run-\\\\xfd\\\\xff"  # the backslash itself escaped: renders as run-\xfd\xff


def test_a_log_line_naming_bytes_that_are_not_utf8_keeps_them(tmp_path):
    from ffnlab.files import append_text

    append_text(tmp_path / "w.log", "$ ffnlab train --out " + os.fsdecode(b"\xfd") + "\n")
    assert (tmp_path / "w.log").read_bytes() == b"$ ffnlab train --out \xfd\n"


def test_the_step_figure_line_shows_a_name_that_is_not_utf8(tmp_path):
    name = os.fsdecode(b"\xfd.svg")
    p = subprocess.run([sys.executable, "-m", "ffnlab", "size", "--d-model", "256", "--ratio", "4", "--n-layers", "2",
                        "--plot", name], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": SRC, "PYTHONIOENCODING": "utf-8"})
    assert p.returncode == 0, p.stderr[-1500:]
    assert "to \\xfd.svg" in p.stderr, p.stderr[-500:]
    assert os.listdir(tmp_path) == [name]


# -- 9. two reports at once ---------------------------------------------------------------------------

def test_a_report_beside_another_running_says_so(tmp_path):
    from fake_sweeps import fake_sweep

    from ffnlab.files import new_temp_dir

    fake_sweep(tmp_path / "sw", {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)}, seeds=2, noise=0.01)
    (tmp_path / "rr").mkdir()
    new_temp_dir(tmp_path / "rr", ".ffnlab-report")  # as the other report, a live process (this one), leaves it
    line = assert_refused(cli("report", "sw", "--out", "rr", where=tmp_path))  # holds: refused, nothing lost
    # was: "rr holds files that are not an ffnlab report (.ffnlab-tmp-.ffnlab-report-PID-HEX); choose another --out"
    assert "not an ffnlab report" not in line and ".ffnlab-tmp-" not in line, line
    assert "another ffnlab report is writing" in line and str(os.getpid()) in line, line
    assert len(os.listdir(tmp_path / "rr")) == 1  # the other's temporary untouched


def _two_arm_sweep(where: Path) -> None:
    from fake_sweeps import fake_sweep

    fake_sweep(where, {"gelu-r4": (0.0, 1.0), "gelu-r2": (0.01, 1.0)}, seeds=2, noise=0.01)


def test_a_report_beside_another_running_over_an_earlier_report_says_so(tmp_path):
    from ffnlab.files import new_temp_dir

    _two_arm_sweep(tmp_path / "sw")
    assert cli("report", "sw", "--out", "rr", where=tmp_path).code == 0
    before = sorted(os.listdir(tmp_path / "rr"))
    new_temp_dir(tmp_path / "rr", "results.json")  # the other report, live, rewriting a file
    assert_refused(cli("report", "sw", "--out", "rr", where=tmp_path), "another ffnlab report is writing")
    assert len(os.listdir(tmp_path / "rr")) == len(before) + 1


def test_a_killed_reports_temporary_is_cleared_not_reported(tmp_path):
    _two_arm_sweep(tmp_path / "sw")
    (tmp_path / "rr").mkdir()
    made = _python("from ffnlab.files import new_temp_dir; new_temp_dir(\"rr\", \".ffnlab-report\")", tmp_path)
    assert made.returncode == 0 and len(os.listdir(tmp_path / "rr")) == 1, made.stderr  # its writer has exited
    r = cli("report", "sw", "--out", "rr", where=tmp_path)
    assert r.code == 0, r.stderr[-1000:]
    assert not [n for n in os.listdir(tmp_path / "rr") if n.startswith(".ffnlab-tmp-")]


def test_a_strangers_file_is_still_named_as_one(tmp_path):
    _two_arm_sweep(tmp_path / "sw")
    (tmp_path / "rr").mkdir()
    (tmp_path / "rr" / "notes.txt").write_text("mine")
    assert_refused(cli("report", "sw", "--out", "rr", where=tmp_path), "not an ffnlab report (notes.txt)")
    assert (tmp_path / "rr" / "notes.txt").read_text() == "mine"


# -- handled right: a sample --------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "inf", "-0", "1e400", "1e-400"])
def test_a_timeout_at_a_type_boundary_is_one_line(tmp_path, value):
    assert_refused(cli("table", "gpt2", "--timeout", value, where=tmp_path), "--timeout")


@pytest.mark.parametrize("value", ["\x1b[2J", "\u202eH100", "H\x00100"], ids=["esc", "rtl", "nul"])
def test_a_control_character_in_a_value_is_shown_escaped(tmp_path, value):
    r = cli("fit", "gpt2", "--gpus", "1", "--gpu", value, "--json", where=tmp_path)
    assert_refused(r, "unknown accelerator")
    assert not any(c in r.stderr for c in "\x1b\x00\u202e") and r.stdout == ""


@pytest.mark.parametrize("text, name", [("", "e.yaml"), ("---", "d.yaml"), ("[]", "l.json"),
                                        ("\x89PNG\r\n\x1a\n", "b.json")], ids=["empty", "dashes", "list", "png"])
def test_an_empty_or_binary_spec_is_one_line(tmp_path, text, name):
    (tmp_path / name).write_text(text)
    assert_refused(cli("sweep", name, "--estimate", where=tmp_path))
    assert os.listdir(tmp_path) == [name]


@pytest.mark.parametrize("columns", ["1", "abc", "1000000000"])
def test_any_columns_gives_a_whole_table(tmp_path, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    r = cli("zoo", "--family", "gpt-2", where=tmp_path)
    assert r.code == 0 and "gpt2" in r.stdout, r.stderr[-500:]


def test_stdout_on_a_full_disk_is_one_line(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    p = _python(RUN.format(args='"size", "--d-model", "256", "--ratio", "4", "--json"'), tmp_path, ">/dev/full")
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "No space left" in lines[0], p.stderr[-1500:]


def test_a_json_answer_is_strict_under_an_ascii_locale(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ffnlab", "zoo", "--json", "--family", "llama"], cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": SRC, "PYTHONIOENCODING": "ascii", "LC_ALL": "C"},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-1000:]
    assert _strict(p.stdout)
