"""storygpt.atomic: the one place files are written atomically."""

import os

import pytest

from storygpt.atomic import atomic_write, file_mode, leftovers, write_bytes, write_text


def test_write_text_and_bytes(tmp_path):
    p = tmp_path / "sub" / "a.txt"
    write_text(p, "héllo\nworld\n")
    assert p.read_bytes() == "héllo\nworld\n".encode()
    write_bytes(p, b"\x00\xff")
    assert p.read_bytes() == b"\x00\xff"
    assert os.stat(p).st_mode & 0o777 == file_mode()
    assert sorted(os.listdir(p.parent)) == ["a.txt"]


def test_failure_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    p = tmp_path / "ckpt.bin"
    write_bytes(p, b"good")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(p, "wb") as f:
            f.write(b"half a fi")
            raise RuntimeError("boom")
    assert p.read_bytes() == b"good"
    assert os.listdir(tmp_path) == ["ckpt.bin"]


def test_interrupt_is_handled_like_an_error(tmp_path):
    p = tmp_path / "x.txt"
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(p, "w") as f:
            f.write("partial")
            raise KeyboardInterrupt
    assert not p.exists() and os.listdir(tmp_path) == []


def test_bad_mode():
    with pytest.raises(ValueError, match="'a'"):
        with atomic_write("x", "a"):
            pass


def test_leftovers_are_the_temporary_files_of_that_path_only(tmp_path):
    target = tmp_path / "ckpt.pt"
    stale = tmp_path / ".ckpt.pt.efgh5678.tmp"  # what a kill -9 during atomic_write leaves
    stale.write_bytes(b"half a checkpoint")
    (tmp_path / ".best.pt.abcd1234.tmp").write_bytes(b"another file's")
    with atomic_write(target, "wb") as f:
        during = leftovers(target)  # the stale one and the one being written
        f.write(b"whole")
    assert len(during) == 2 and stale in during
    assert leftovers(target) == [stale] and target.read_bytes() == b"whole"


def test_a_folder_that_cannot_be_written_names_the_target(tmp_path, monkeypatch):
    # before: the PermissionError named the hidden temporary file (.x.json.abc123.tmp)
    import errno
    import tempfile

    def refused(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / ".x.json.abc.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    with pytest.raises(PermissionError) as e:
        write_text(tmp_path / "x.json", "{}")
    assert str(e.value) == f"[Errno 13] Permission denied: '{tmp_path / 'x.json'}'"
    assert not list(tmp_path.iterdir())
