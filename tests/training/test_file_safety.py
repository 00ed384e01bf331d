"""Data safety of the shared file mechanism (:mod:`ffnlab.files`) under real concurrent processes.

A second process (a "holder") is started with ``subprocess`` and driven through pipes: it prints
a line when it reached the state the test needs and waits for its stdin to close before going on,
so the two processes interleave in exactly the order under test, without sleeps.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fuzz_cli import assert_refused, cli

from ffnlab.errors import FfnlabError

# A holder: takes the lock of folder argv[1] as a trainer does (provisional folder + flock), then
# writes config.yaml there atomically, pausing just after its temporary folder is made (before
# the marker is in it): the moment a concurrent starter used to delete the folder under it.
HOLDER = textwrap.dedent("""
    import builtins, sys
    from pathlib import Path
    import ffnlab.files as files
    from ffnlab.training.locking import folder_lock

    out, pause = Path(sys.argv[1]), sys.argv[2]

    def wait_here():
        print("ready", flush=True)
        sys.stdin.read()  # until the test closes the pipe

    def pausing_open(path, *a, **k):
        if pause == "in-write" and Path(path).name == files.MARK:
            wait_here()
        return builtins.open(path, *a, **k)

    files.open = pausing_open  # the module's open: only ffnlab.files' own calls pause
    with files.provisional_dir(out), folder_lock(out, "ffnlab train"):
        if pause == "locked":
            wait_here()
        files.write_atomic(out / "config.yaml", "written by the holder\\n")
    print("done", flush=True)
""")


def start_holder(out: Path, pause: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), pause], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()  # blocks until the holder is where the test wants it
    assert line == "ready\n", (line, p.stderr.read() if p.poll() is not None else "")
    return p


def finish_holder(p: subprocess.Popen) -> None:
    out, err = p.communicate(timeout=60)  # closes stdin: the holder goes on
    assert p.returncode == 0 and out.strip() == "done", err[-2000:]


def locked(lock: Path) -> bool:
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_refused_trainer_leaves_a_live_siblings_run_folder_alone(tmp_path, monkeypatch):
    """``--out P/a`` with ``P`` new: while it prepares its corpus another trainer starts in ``P/b``;
    the first is refused (too short a corpus) and removes only what it made itself."""
    from ffnlab.training import runconfig

    (tmp_path / "tiny.txt").write_text("to be or not to be, " * 3)
    parent = tmp_path / "P"
    holders: list[subprocess.Popen] = []
    real = runconfig.prepare_data

    def prepare_while_a_sibling_starts(*a, **k):
        holders.append(start_holder(parent / "b", "locked"))  # P exists now: the sibling holds P/b/.lock
        return real(*a, **k)

    monkeypatch.setattr(runconfig, "prepare_data", prepare_while_a_sibling_starts)
    r = cli("train", "--out", str(parent / "a"), "--set", "data.corpus=tiny.txt", "--set", "data.cache_dir=cache",
            "--set", "train.seq_len=64", "--set", "train.progress=off", where=tmp_path)
    assert_refused(r, "too few")
    assert len(holders) == 1
    try:
        assert not (parent / "a").exists()  # its own folder is gone
        assert (parent / "b" / ".lock").is_file() and locked(parent / "b" / ".lock")  # the sibling's is not
    finally:
        finish_holder(holders[0])
    assert (parent / "b" / "config.yaml").read_text() == "written by the holder\n"


def test_a_starter_refused_by_the_lock_leaves_the_winners_write_alone(tmp_path, monkeypatch):
    """Two trainers on one new folder: the loser (refused: the folder is locked) must not delete
    the winner's lock or its half-made temporary folder, so the winner's write succeeds."""
    import ffnlab.training.memory as memory

    out = tmp_path / "run"
    holders: list[subprocess.Popen] = []

    def fits_while_the_winner_starts(*a, **k):
        holders.append(start_holder(out, "in-write"))  # the winner: locked, inside its first write

    monkeypatch.setattr(memory, "check_fits", fits_while_the_winner_starts)
    r = cli("train", "--out", str(out), "--set", "train.progress=off", where=tmp_path)
    assert_refused(r, "another ffnlab train is running")
    assert len(holders) == 1
    finish_holder(holders[0])  # its temporary folder and lock were still there
    assert sorted(p.name for p in out.iterdir()) == [".lock", "config.yaml"]


def test_remove_stale_leaves_a_live_writers_unmarked_temporary_alone(tmp_path):
    """An empty ``.ffnlab-tmp-*`` folder of a running process (just made, marker not yet written)
    is not stale: removing it made that process fail with 'No such file or directory'."""
    from ffnlab.files import remove_stale

    out = tmp_path / "run"
    holder = start_holder(out, "in-write")
    try:
        assert remove_stale(out, out) == []
    finally:
        finish_holder(holder)
    assert (out / "config.yaml").is_file()


def test_a_write_clears_only_dead_writers_temporaries_of_ffnlabs_own_making(tmp_path):
    """Each write clears what killed writes left in its folder (a dead process's marked temporary),
    and nothing else: a live writer's half-made temporary, a folder with ffnlab's temporary name but
    without its marker (someone else's), another file."""
    from ffnlab.files import MARK, TEMP_PREFIX, write_atomic

    out = tmp_path / "run"
    holder = start_holder(out, "in-write")  # a live writer: its temporary is made, its marker not yet written
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / f"{TEMP_PREFIX}summary.json-{dead.pid}-0123456789ab"
    foreign = out / f"{TEMP_PREFIX}notes-{dead.pid}-0123456789ab"
    for folder in (stale, foreign):
        folder.mkdir()
        (folder / "data").write_text("half")
    (stale / MARK).write_text(f"created by ffnlab, process {dead.pid}; ffnlab may remove this folder\n")
    live = [p.name for p in out.iterdir() if p.name.startswith(TEMP_PREFIX) and str(holder.pid) in p.name]
    assert len(live) == 1, sorted(os.listdir(out))
    try:
        write_atomic(out / "other.txt", "mine")
        assert sorted(p.name for p in out.iterdir()) == sorted([".lock", foreign.name, *live, "other.txt"])
    finally:
        finish_holder(holder)
    assert (out / "config.yaml").read_text() == "written by the holder\n"  # its write went through
    assert (foreign / "data").read_text() == "half"


def test_temporary_names_are_unique_per_call(tmp_path):
    from ffnlab.files import new_temp_dir

    names = {new_temp_dir(tmp_path, "config.yaml").name for _ in range(50)}
    assert len(names) == 50 and all(str(os.getpid()) in n for n in names)


# -- the corpus cache never followed out through a link ----------------------------------------

@pytest.mark.parametrize("link", ["corpora", "corpora/key"])
def test_a_symlinked_cache_folder_leading_out_is_refused(tmp_path, monkeypatch, link):
    from ffnlab.training.corpus import prepare
    from ffnlab.training.corpus.prepare import _settings, settings_key
    from ffnlab.training.corpus.sources import resolve_source

    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    cache.mkdir()
    elsewhere.mkdir()
    (tmp_path / "text.txt").write_text("to be or not to be, that is the question. " * 40)
    monkeypatch.setenv("FFNLAB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    if link == "corpora":
        (cache / "corpora").symlink_to(elsewhere)
    else:
        key = settings_key(_settings(resolve_source("text.txt", "text"), "byte", 4096, "text", None))
        (cache / "corpora").mkdir()
        (cache / "corpora" / key).symlink_to(elsewhere)
    with pytest.raises(FfnlabError, match="symlink") as e:
        prepare("text.txt", "byte", progress=False)
    assert "\n" not in str(e.value) and str(cache) in str(e.value)
    assert list(elsewhere.iterdir()) == []
    r = cli("train", "--out", "r", "--set", "data.corpus=text.txt", "--set", "train.progress=off", where=tmp_path)
    assert_refused(r, "symlink")
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "r").exists()


@pytest.mark.parametrize("what, said", [("file", "not a folder"), ("dangling-link", "does not exist")])
def test_a_corpora_folder_that_is_no_folder_is_named_in_one_line(tmp_path, monkeypatch, what, said):
    """A file or a link to nothing (inside the cache) at ``corpora/``: the folder is named, not a
    bare "File exists" (the one helper every folder under the cache is made by)."""
    from ffnlab.training.corpus import prepare

    cache = tmp_path / "cache"
    cache.mkdir()
    if what == "file":
        (cache / "corpora").write_text("MINE")
    else:
        (cache / "corpora").symlink_to(cache / "gone")
    (tmp_path / "text.txt").write_text("to be or not to be, that is the question. " * 40)
    monkeypatch.setenv("FFNLAB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FfnlabError, match="prepared-corpus cache folder") as e:
        prepare("text.txt", "byte", progress=False)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert sorted(os.listdir(cache)) == ["corpora"]
    assert what != "file" or (cache / "corpora").read_text() == "MINE"


def test_a_symlinked_cache_folder_inside_the_cache_is_followed(tmp_path, monkeypatch):
    """A link that stays inside the cache folder is the user's layout, not an escape."""
    from ffnlab.training.corpus import prepare

    cache = tmp_path / "cache"
    (cache / "real").mkdir(parents=True)
    (cache / "corpora").symlink_to(cache / "real")
    (tmp_path / "text.txt").write_text("to be or not to be, that is the question. " * 40)
    monkeypatch.setenv("FFNLAB_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    data = prepare("text.txt", "byte", progress=False)
    assert data.train_tokens > 0 and [p.name for p in (cache / "real").iterdir()] == [data.dir.name]


# -- when a marked temporary is stale ---------------------------------------------------------

def _marked_temp(parent: Path, pid: int, extra: str = "") -> Path:
    from ffnlab.files import MARK

    d = parent / f".ffnlab-tmp-x-{pid}-0123456789ab"
    d.mkdir(parents=True)
    (d / MARK).write_text(f"created by ffnlab, process {pid}; ffnlab may remove this folder\n{extra}")
    (d / "data").write_text("half")
    return d


def test_a_marked_temporary_goes_only_once_its_owner_is_provably_gone(tmp_path):
    import socket

    from ffnlab.files import MARK, _started, mark_text, remove_stale

    me, parent, host = os.getpid(), os.getppid(), socket.gethostname()
    assert f"process {me};" in mark_text() and f"started {_started(me)}" in mark_text()
    _marked_temp(tmp_path / "ours", me, mark_text().split("\n", 1)[1])
    reused = _marked_temp(tmp_path / "reused", me, f"host {host}\nstarted 1\n")
    _marked_temp(tmp_path / "alive", parent, f"host {host}\nstarted {_started(parent)}\n")
    remote = _marked_temp(tmp_path / "remote", 2**22 + 7, "host another-host.invalid\n")
    assert remove_stale(tmp_path / "ours") == []  # this process's own, in use
    assert remove_stale(tmp_path / "reused") == [reused]  # an earlier process that had this id
    assert remove_stale(tmp_path / "alive") == []  # a running process's
    assert remove_stale(tmp_path / "remote") == []  # another host's process cannot be asked: kept (a week)
    week = 8 * 24 * 3600
    os.utime(remote / MARK, (remote.stat().st_atime - week, remote.stat().st_mtime - week))
    assert remove_stale(tmp_path / "remote") == [remote]


def test_a_reading_lock_removes_only_the_lock_file_it_created(tmp_path):
    # oracle: the folder's listing before and after each block
    from ffnlab.training.locking import folder_lock

    with folder_lock(tmp_path, "look", reading=True):
        assert (tmp_path / ".lock").is_file()
    assert not (tmp_path / ".lock").exists()  # created by the look: gone with it
    with folder_lock(tmp_path, "writer"):
        pass
    assert (tmp_path / ".lock").is_file()  # a writer's lock file stays, as every run keeps one
    with folder_lock(tmp_path, "look", reading=True):
        pass
    assert (tmp_path / ".lock").is_file()  # there before the look: left as it was


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
def test_a_file_that_cannot_be_read_is_one_line_naming_it(tmp_path):
    # oracle: the kernel's own answer (reading /proc/self/mem at offset 0 is EIO); the eighteenth CLI
    # pass saw "error: [Errno 5] Input/output error" with no path
    with pytest.raises(OSError):
        Path("/proc/self/mem").read_bytes()
    r = cli("claims", "--evidence", "/proc/self/mem", where=tmp_path)
    assert_refused(r, "cannot read claims evidence /proc/self/mem")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_a_file_longer_than_its_size_says_is_refused_at_the_limit():
    # oracle: the kernel says /proc/self/maps is 0 bytes long and gives more than 100 when read
    from ffnlab import files

    maps = Path("/proc/self/maps")
    assert maps.stat().st_size == 0 and len(maps.read_bytes()) > 100
    with pytest.raises(FfnlabError, match="over the 100-byte limit"):
        files.read_text(maps, "config file", max_bytes=100)
