"""The notebook in docs/ runs as a reader would run it: every cell without error, the results shown
as HTML tables, the intervals as an inline figure (the notebook's backend unchanged), and the
exported CSV read back by pandas with the guarantee's columns."""
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("polars")

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebooks" / "private_leaderboards.ipynb"


def outputs(cell) -> dict:
    """The MIME types of a cell's results, and their text (printed, plain and HTML)."""
    kinds, text = set(), ""
    for out in cell.outputs:
        kinds |= set(out.get("data", {}))
        data = out.get("data", {})
        text += out.get("text", "") + data.get("text/plain", "") + data.get("text/html", "")
    return {"kinds": kinds, "text": text}


@pytest.mark.slow
def test_the_notebook_ranks_privately_shows_and_exports(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "kept without outputs"
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = {c.source.splitlines()[-1]: outputs(c) for c in nb.cells if c.cell_type == "code"}
    assert "text/html" in code["fit"]["kinds"] and "<b>Guarantee:</b>" in code["fit"]["text"]  # the HTML repr
    assert "text/html" in code["central"]["kinds"]
    assert "image/png" in code["figure"]["kinds"]  # the intervals, inline
    assert "warning" not in " ".join(o["text"].lower() for o in code.values())
    exported = code['back[["rank", "item", "score", "private", "epsilon", "unit", "guarantee"]].head(3)']
    assert "text/html" in exported["kinds"] and "one comparison" in exported["text"]
    assert "factor of 7.39 (e^2)" in code['print(back["guarantee"].iloc[0])']["text"]
    assert (tmp_path / "arena_ranking.csv").is_file()
