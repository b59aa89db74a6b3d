import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def cli(capsys):
    """Run ``privrank ARGV...``; returns ``(exit code, stdout, stderr)``."""
    from privrank.cli import main

    def run(*argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err
    return run


@pytest.fixture
def small_fs(tmp_path):
    """A 2 MiB tmpfs of the test's own, for full and read-only file systems (which ``chmod`` cannot
    give root): ``fs.path``; ``fs.fill()`` fills it, ``fs.read_only()`` remounts it read-only.
    Skipped where the tests may not mount (not root, or no mount permission)."""
    import os
    import subprocess
    from types import SimpleNamespace

    path = tmp_path / "fs"
    path.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(path)]
    if os.geteuid() != 0 or subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("needs permission to mount a tmpfs")

    def fill():
        with open(path / "filler", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(bytes(1 << 16))
            except OSError:
                pass

    def read_only():
        subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True, capture_output=True)

    yield SimpleNamespace(path=path, fill=fill, read_only=read_only)
    subprocess.run(["umount", "-l", str(path)], capture_output=True)
