"""Graph pictures: structure, colours, DOT and the dependency-free SVG fallback."""

import funcgrad as torch
from funcgrad.viz import LEAF, OP, ROOT, make_dot


def test_make_dot_structure_and_colours(tmp_path):  # noqa: D103
    x = torch.ones(3, requires_grad=True)
    w = torch.randn(3, 3, requires_grad=True)
    out = ((w @ x).tanh() * x).sum()
    g = make_dot(out, params={"x": x, "w": w})
    labels = {n["label"].split("\n")[0]: n["color"] for n in g.nodes}
    assert labels["SumBackward0"] == ROOT
    assert labels["MulBackward0"] == OP and labels["TanhBackward0"] == OP and labels["MvBackward0"] == OP
    assert labels["x"] == LEAF and labels["w"] == LEAF
    assert len(g.edges) == 6  # x feeds both MulBackward0 and MvBackward0
    assert g.source.startswith("digraph {") and "SumBackward0" in g.source
    svg = g._builtin_svg()
    assert svg.startswith("<svg") and svg.count("<rect") == len(g.nodes)
    p = g.render(str(tmp_path / "g.svg"))
    with open(p) as f:
        assert f.read().lstrip().startswith(("<svg", "<?xml", "<!DOCTYPE"))
    g.render(str(tmp_path / "g.dot"))


def test_make_dot_saved_tensors_and_leaf_root():
    x = torch.ones(2, requires_grad=True)
    g = make_dot((x * x).sum(), show_saved=True)
    assert any(n["label"].startswith("saved") for n in g.nodes)
    assert len(make_dot(x).nodes) == 1
