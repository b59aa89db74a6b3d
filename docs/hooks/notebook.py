"""mkdocs hook: the notebooks of docs/ are shown executed, as a reader who runs them sees them.

Each notebook is kept without outputs; at build time it is executed (every cell, an error fails
the build) in a scratch directory, so that what it writes stays out of docs/, and mkdocs-jupyter
renders the executed copy at the notebook's own address.
"""
import tempfile
from pathlib import Path

import nbformat
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File
from nbclient import NotebookClient

_scratch: tempfile.TemporaryDirectory | None = None


def on_pre_build(config):
    global _scratch
    _scratch = tempfile.TemporaryDirectory(prefix="privrank-docs-")


@event_priority(100)  # before mkdocs-jupyter takes the notebooks as pages
def on_files(files, config):
    for file in [f for f in files if f.src_uri.endswith(".ipynb")]:
        nb = nbformat.read(file.abs_src_path, as_version=4)
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": _scratch.name}}).execute()
        executed = Path(_scratch.name) / file.src_uri
        executed.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, executed)
        files.remove(file)  # a File of the scratch directory (mkdocs-jupyter takes no generated File)
        files.append(File(file.src_uri, _scratch.name, config.site_dir, config.use_directory_urls))
    return files


def on_post_build(config):
    _scratch.cleanup()
