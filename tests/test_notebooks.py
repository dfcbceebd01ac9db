"""Every notebook in notebooks/ runs without a cell error, and matches its generator's sources.

The notebooks are written by ``notebooks/_build.py`` (regenerate with
``python notebooks/_build.py``); here each one is executed afresh in a ``python3`` kernel and its
outputs must equal the committed ones in everything but timings: numbers followed by a unit of
time or speed (``4.8 s``, ``12 ms``, ``291 steps/s``, ``5.3x``) are masked as ``<timing>`` on
both sides before comparing. Images are compared by kind (matplotlib's PNG bytes and Graphviz's
layout vary by version); a graph picture from the built-in layout (no ``dot`` installed) is
compared exactly, since that layout is pure Python.
"""

import importlib.util
import os
import re

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

# a number, then a unit of time or speed; not a shape like (8, 8) nor a word like "2 steps"
TIMING = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?\s?(?:steps/s|it/s|µs|us|ms|s|x|×)(?![\w/])")


# an object's address in its repr (``<AddBackward0 object at 0x7f3c1f2a1050>``) changes every run
ADDRESS = re.compile(r"\bat 0x[0-9a-f]+")
# a cell's code file as the kernel names it in a message (``/tmp/ipykernel_24671/4293239129.py``)
# holds the kernel's process id
KERNEL_FILE = re.compile(r"ipykernel_\d+/")


def _mask(text: str) -> str:
    return KERNEL_FILE.sub("ipykernel_<pid>/", ADDRESS.sub("at 0x<address>", TIMING.sub("<timing>", text)))


def _outputs(cell, exact_svg: bool):
    """A cell's outputs in comparable form (timings masked, images by kind)."""
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":  # the kernel splits a stream into chunks by timing: join them
            if out and out[-1][:2] == ("stream", o.name):
                out[-1] = ("stream", o.name, out[-1][2] + _mask(o.text))
            else:
                out.append(("stream", o.name, _mask(o.text)))
        elif o.output_type in ("execute_result", "display_data"):
            data = {k: (_mask(v) if k.startswith("text/") else v if k == "image/svg+xml" and exact_svg else "<image>")
                    for k, v in o.data.items()}
            out.append((o.output_type, data))
        else:
            out.append((o.output_type, o.get("ename"), o.get("evalue")))
    return out


def test_timings_are_masked_and_nothing_else():
    assert _mask("first 2 steps 4.8 s, then 291 steps/s; 12 ms, 3.5 µs; 5.3x; 1.2e-05 s") == \
        "first 2 steps <timing>, then <timing>; <timing>, <timing>; <timing>; <timing>"
    assert _mask("<AddBackward0 object at 0x7f3c1f2a1050>") == "<AddBackward0 object at 0x<address>>"
    assert _mask("(call at /tmp/ipykernel_24671/42.py:18)") == "(call at /tmp/ipykernel_<pid>/42.py:18)"
    for kept in ["(8, 8)", "96.9%", "1437 training", "2 steps", "5.960464477539063e-08", "2x2", "x = 3"]:
        assert _mask(kept) == kept
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
    from funcgrad.viz import has_dot

    nb = BUILD.build(name)
    BUILD.execute(nb, timeout=600)  # raises CellExecutionError naming the cell that failed
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    committed = [c for c in nbformat.read(os.path.join(ROOT, name + ".ipynb"), as_version=4).cells
                 if c.cell_type == "code"]
    exact_svg = not has_dot()
    for k, (old, new) in enumerate(zip(committed, code)):
        assert _outputs(old, exact_svg) == _outputs(new, exact_svg), \
            f"{name} code cell {k}: committed outputs are stale; re-execute: python notebooks/_build.py {name[:2]}"
