"""A fresh notebook kernel, with no ``%matplotlib inline``, shows privrank's results as they are meant to be
seen: a plot as an inline image, a result as an HTML table, a progress bar (a widget with ipywidgets, else
text) without tqdm's warning, and the notebook's backend unchanged."""
import os
from pathlib import Path

import pytest

import privrank

nbformat = pytest.importorskip("nbformat", reason="executing a notebook needs nbformat")
nbclient = pytest.importorskip("nbclient", reason="executing a notebook needs nbclient")
pytest.importorskip("ipykernel", reason="executing a notebook needs a Python kernel (ipykernel)")
pytest.importorskip("matplotlib", reason="plots need matplotlib")

CELLS = {
    "setup": "import matplotlib\nimport numpy as np\nimport privrank as pr\nfrom privrank.simulate import "
             "sample_debiased_release\nbackend = matplotlib.get_backend()\n"
             "fit = pr.fit_btl(sample_debiased_release(np.linspace(-1, 1, 5), 200, 1.0, rng=0))",
    "result": "fit",
    "plot": "pr.confidence_intervals(fit).plot()",
    "progress": "from privrank.progress import progress_bar\nbar = progress_bar(3, 'cells', 'cell')\n"
                "for _ in range(3):\n    bar.update(1)\nbar.close()",
    "backend": "matplotlib.get_backend() == backend",
}


@pytest.mark.slow
def test_a_fresh_kernel_shows_plots_inline_results_as_html_and_progress(tmp_path):
    from jupyter_client.kernelspec import NoSuchKernel

    src = str(Path(privrank.__file__).resolve().parents[1])  # the kernel imports the privrank under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS.values()])
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel is installed")
    out = {name: cell.outputs for name, cell in zip(CELLS, nb.cells)}
    kinds = {name: {k for o in outputs for k in o.get("data", {})} for name, outputs in out.items()}
    assert "image/png" in kinds["plot"] or "image/svg+xml" in kinds["plot"], out["plot"]
    assert "text/html" in kinds["result"] and "<b>Guarantee:</b>" in out["result"][0]["data"]["text/html"]
    drawn = "".join(o.get("text", "") for o in out["progress"])
    assert "3/3" in drawn or "application/vnd.jupyter.widget-view+json" in kinds["progress"], out["progress"]
    assert "IProgress" not in drawn and "Warning" not in drawn
    assert out["backend"][0]["data"]["text/plain"] == "True"
    assert not any(o["output_type"] == "error" for outputs in out.values() for o in outputs)
