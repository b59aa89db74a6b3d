"""The output layer (:mod:`privrank.files`): atomic files, write-through, reservations."""
import os
import threading

import pytest

from privrank.errors import InputError
from privrank.files import Output, write_text_atomic


def test_a_symlink_is_written_through_not_replaced(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_text_atomic(link, "new\n", force=True)
    assert link.is_symlink() and target.read_text() == "new\n"


def test_devices_and_fifos_are_written_through_never_unlinked(tmp_path):
    write_text_atomic("/dev/null", "x\n", force=True)
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    write_text_atomic(fifo, "through the pipe\n", force=True)
    reader.join(10)
    assert got == ["through the pipe\n"] and os.path.exists(fifo)


def test_refusals_come_before_anything_is_written(tmp_path):
    (tmp_path / "dir").mkdir()
    for path, message in ((tmp_path / "dir", "is a directory"), (tmp_path / "missing" / "x.csv", "does not exist")):
        with pytest.raises(InputError, match=message):
            Output(path).reserve()
    with pytest.raises(InputError, match="suffix"):
        Output(tmp_path / "myplot", plot=True)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):  # root writes anywhere
            with pytest.raises(InputError, match="not writable"):
                Output(locked / "x.csv").reserve()
    finally:
        locked.chmod(0o700)


def test_new_files_follow_the_umask_and_leave_no_temporaries(tmp_path):
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.csv", "x\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o644
    stale = tmp_path / ".a.csv.999999999.abc.tmp"  # left by a killed process that no longer runs
    stale.write_text("released data")
    write_text_atomic(tmp_path / "a.csv", "y\n", force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


def test_a_reservation_is_exclusive_and_abandoned_when_unused(tmp_path):
    path = tmp_path / "out.csv"
    first, second = Output(path), Output(path)
    first.reserve()
    with pytest.raises(InputError, match="reserved by a privrank release that is still running"):
        second.reserve()
    first.abandon()
    assert list(tmp_path.iterdir()) == []  # neither the temporary nor the marker is left


def test_an_output_that_cannot_be_written_is_refused_at_reserve(tmp_path):
    # /proc holds files root can open but no file can be created there: the atomic write would fail
    for path, force in (("/proc/version", True), ("/proc/privrank-out.csv", False)):
        with pytest.raises(InputError, match="not writable"):
            Output(path, force=force).reserve()
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="Not a directory"):  # a file where a folder is expected
        Output(tmp_path / "file" / "x.csv").reserve()


@pytest.mark.parametrize("name", ["x" * 300 + ".csv", "d" * 200 + "/" + "e" * 4000 + "/x.csv"])
def test_a_name_too_long_is_refused_as_input_not_an_oserror(tmp_path, name):
    # Path.is_symlink() raises ENAMETOOLONG, which the command line printed as a traceback
    with pytest.raises(InputError, match="cannot use .* for output"):
        Output(tmp_path / name).reserve()
    with pytest.raises(InputError, match="cannot use .* for output"):
        write_text_atomic(tmp_path / name, "x\n")
    assert os.listdir(tmp_path) == []


def test_an_output_on_a_full_or_read_only_file_system_is_refused_and_left_whole(small_fs):
    old = small_fs.path / "old.csv"
    old.write_text("earlier release\n")
    for damage in (small_fs.fill, small_fs.read_only):
        damage()
        for path, force in ((old, True), (small_fs.path / "new.csv", False)):
            with pytest.raises(InputError, match="not writable"):
                Output(path, force=force).reserve()
        assert old.read_text() == "earlier release\n" and not (small_fs.path / "new.csv").exists()


def test_a_device_or_fifo_is_opened_at_reserve(tmp_path):
    out = Output("/dev/null", force=True)
    out.reserve()
    assert out._stream is not None  # held open: the write needs no second open
    out.abandon()
    assert out._stream is None
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    out = Output(fifo, force=True)
    out.reserve()  # waits for the reader here, before a release would be charged
    out.write_text("x\n")
    reader.join(10)
    assert got == ["x\n"]


def test_a_reservation_never_creates_the_target_and_holds_the_room(tmp_path):
    path = tmp_path / "out.csv"
    out = Output(path)
    out.reserve(1 << 20)
    (tmp,) = tmp_path.glob(".out.csv.*.tmp")
    assert not path.exists() and tmp.stat().st_blocks * 512 >= 1 << 20  # the room is allocated, not promised
    out.write_text("x\n")
    assert path.read_text() == "x\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_an_output_name_ending_with_a_slash_is_refused(tmp_path):
    """``-o out.csv/`` quietly wrote out.csv: the slash says a directory was meant."""
    from privrank.files import Output

    with pytest.raises(InputError, match="ends with a slash"):
        Output(str(tmp_path / "out.csv") + "/")
    assert not (tmp_path / "out.csv").exists()
