"""storygpt.atomic: the one place files are written atomically."""

import os

import pytest

from storygpt.atomic import atomic_write, file_mode, write_bytes, write_text


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
