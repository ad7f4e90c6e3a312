"""Atomic writers of fitontest.core.io: the target is whole or untouched, no temporary left."""
import pytest

from fitontest.core import io


def test_write_text_and_bytes_round_trip(tmp_path):
    p = io.write_text(tmp_path / "sub" / "a.md", "ä ± –\n")
    assert p == tmp_path / "sub" / "a.md"
    assert p.read_bytes() == "ä ± –\n".encode("utf-8")
    q = io.write_bytes(tmp_path / "b.bin", b"\x00\xff")
    assert q.read_bytes() == b"\x00\xff"
    assert sorted(x.name for x in tmp_path.rglob("*")) == ["a.md", "b.bin", "sub"]


def test_failing_writer_leaves_no_partial_file(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_text("half a fi")
            raise RuntimeError("writer died")
    assert list(tmp_path.iterdir()) == []
    # an existing output survives a failing rewrite unchanged
    io.write_text(target, "old\n")
    with pytest.raises(TypeError):
        io.write_text(target, 123)
    with pytest.raises(TypeError):
        io.write_bytes(target, "not bytes")
    assert target.read_text() == "old\n"
    assert [x.name for x in tmp_path.iterdir()] == ["out.csv"]
