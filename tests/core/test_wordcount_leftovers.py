"""Folders left by a word count that was killed (storygpt/tokenizers/word_train.py) are removed by the next one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from storygpt.tokenizers import word_train as wordcount
from storygpt.tokenizers.word_train import WordCounter, remove_leftovers

# Spills, prints its folder, then waits to be killed with its runs on disk.
_CHILD = """
import sys, time
from storygpt.tokenizers.word_train import WordCounter
c = WordCounter(sys.argv[1], max_entries=1)
for w in ("alpha beta", "gamma delta", "epsilon"):
    c.add(w)
print(c._dir, flush=True)
time.sleep(60)
"""


def test_killed_run_is_removed_by_the_next(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        left = tmp_path / os.path.basename(child.stdout.readline().strip())
        assert left.name.startswith(".wordcount.") and len(list(left.glob("run*.tsv"))) >= 2
        assert remove_leftovers(tmp_path) == []  # alive: its lock is held
        assert left.is_dir()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert left.is_dir()  # nothing cleaned up after kill -9
    with pytest.warns(UserWarning, match=f"removed the folder {left} left over by a word count that was killed"):
        counter = WordCounter(tmp_path, max_entries=1)
    assert not left.exists()
    with counter:
        counter.add("one two three")
        assert counter._dir.is_dir() and counter._dir != left
    assert list(tmp_path.glob(".wordcount.*")) == []


def test_live_counters_and_other_folders_are_kept(tmp_path):
    with WordCounter(tmp_path, max_entries=1) as live:
        live.add("a b c")
        other = tmp_path / "wordcount.keep"  # not ours: no leading dot
        other.mkdir()
        assert remove_leftovers(tmp_path) == []
        assert live._dir.is_dir() and other.is_dir()
        assert sorted(dict(live.totals())) == ["a", "b", "c"]


def test_folder_without_lock_file_is_removed_when_old(tmp_path):
    fresh, old = tmp_path / ".wordcount.fresh", tmp_path / ".wordcount.old"
    for d in (fresh, old):
        d.mkdir()
        (d / "run0000.tsv").write_text("a\t1\n")
    t = time.time() - wordcount.UNLOCKED_STALE_SECONDS - 60
    os.utime(old, (t, t))
    with pytest.warns(UserWarning, match="wordcount.old"):
        assert remove_leftovers(tmp_path) == [old]
    assert fresh.is_dir() and not old.exists()
    assert remove_leftovers(tmp_path / "missing") == []
