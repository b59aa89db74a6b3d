"""Progress bars come from ``tqdm.auto`` (a widget in a notebook with ipywidgets, text without) and are
drawn on a terminal or a notebook kernel's output, nowhere else."""
import io

from privrank.progress import RecordsBar, in_notebook, progress_bar


class KernelStream(io.StringIO):
    """Stands for ipykernel's OutStream: a notebook shows it, though it is not a terminal."""


KernelStream.__module__ = "ipykernel.iostream"


def test_bars_are_tqdm_auto_bars():
    from tqdm.auto import tqdm

    assert isinstance(progress_bar(3, "run", "cell", stream=io.StringIO()), tqdm)
    assert isinstance(RecordsBar(io.StringIO()).bar, tqdm)


def test_a_notebook_kernels_output_gets_a_bar_and_a_pipe_none():
    out = KernelStream()
    assert in_notebook(out) and not in_notebook(io.StringIO())
    bar = progress_bar(4, "run", "cell", stream=out)
    bar.update(4)
    bar.close()
    assert "4/4" in out.getvalue()
    assert progress_bar(4, "run", "cell", stream=KernelStream(), enabled=False).disable
    quiet = io.StringIO()
    bar = progress_bar(4, "run", "cell", stream=quiet)
    bar.update(4)
    bar.close()
    assert quiet.getvalue() == ""
