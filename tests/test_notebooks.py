"""Every notebook in notebooks/ runs without a cell error, and matches its generator's sources.

The notebooks are written by ``notebooks/_build.py`` (regenerate with
``python notebooks/_build.py``); here each one is executed afresh in a ``python3`` kernel.
"""

import importlib.util
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "notebooks")


def _builder():
    spec = importlib.util.spec_from_file_location("_notebooks_build", os.path.join(ROOT, "_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUILD = _builder()
NAMES = sorted(BUILD.NOTEBOOKS)


def test_every_notebook_file_is_generated():
    on_disk = sorted(f[:-6] for f in os.listdir(ROOT) if f.endswith(".ipynb"))
    assert on_disk == NAMES, "regenerate with: python notebooks/_build.py"


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_matches_sources(name):
    committed = nbformat.read(os.path.join(ROOT, name + ".ipynb"), as_version=4)
    fresh = BUILD.build(name)
    assert [(c.cell_type, c.source) for c in committed.cells] == \
        [(c.cell_type, c.source) for c in fresh.cells], f"regenerate with: python notebooks/_build.py {name[:2]}"
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "committed without outputs"
    assert not any(o.get("output_type") == "error" for c in code for o in c.outputs)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name):
    nb = BUILD.build(name)
    BUILD.execute(nb, timeout=600)  # raises CellExecutionError naming the cell that failed
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
