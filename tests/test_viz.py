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
    assert svg.startswith("<svg") and svg.count("<rect class=\"node\"") == len(g.nodes)
    p = g.render(str(tmp_path / "g.svg"))
    with open(p) as f:
        assert f.read().lstrip().startswith(("<svg", "<?xml", "<!DOCTYPE"))
    g.render(str(tmp_path / "g.dot"))


def test_make_dot_saved_tensors_and_leaf_root():
    x = torch.ones(2, requires_grad=True)
    g = make_dot((x * x).sum(), show_saved=True)
    assert any(n["label"].startswith("saved") for n in g.nodes)
    assert len(make_dot(x).nodes) == 1


def test_compiled_summary_of_a_jit_step_does_not_run_it():
    from funcgrad import nn
    from funcgrad.viz import compiled_summary
    import funcgrad.nn.functional as F

    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.jit
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = torch.randn(4, 3), torch.randn(4, 2)
    before = [p.detach().clone() for p in model.parameters()]
    versions = [p._ver[0] for p in model.parameters()]
    summary = compiled_summary(step, x, y)
    assert summary["ops"] > 0 and summary["by_op"]["stablehlo.dot_general"] >= 1
    assert all(k.startswith("stablehlo.") for k in summary["by_op"])  # no bogus '1' entries
    assert sum(summary["by_op"].values()) == summary["ops"]
    for p, b, v in zip(model.parameters(), before, versions):  # lower() did not run the step
        assert torch.equal(p, b) and p.grad is None and p._ver[0] == v
    assert step.num_traces == 1 and not opt.state
    loss = step(x, y)  # the program lower() traced is reused
    assert step.num_traces == 1 and not torch.equal(model.weight, before[0])
    assert "stablehlo.dot_general" in step.lower(x, y).as_text()
    assert step.num_traces == 2  # .grad slots are now set: another state structure
    assert loss.shape == ()


def test_lower_undoes_state_created_by_the_trace():
    from funcgrad import nn

    def make():
        torch.manual_seed(0)
        model = nn.Linear(2, 1)
        return model, torch.optim.Adam(model.parameters(), lr=0.1)

    def train(model, opt, x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    model, opt = make()
    step = torch.jit(train)
    x = torch.randn(3, 2)
    w = model.weight.detach().clone()
    assert "stablehlo.sqrt" in step.lower(model, opt, x).as_text()  # Adam's first step makes its moments
    assert not opt.state and torch.equal(model.weight, w) and model.weight.grad is None
    eager_model, eager_opt = make()
    for _ in range(2):
        step(model, opt, x)
        train(eager_model, eager_opt, x)
    assert len(opt.state) == 2
    assert torch.allclose(model.weight, eager_model.weight) and torch.allclose(model.bias, eager_model.bias)


# ---- readable pictures: graphs as a person draws them (issue 19 §2) ------------------------------

import math  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

import pytest  # noqa: E402

from funcgrad import nn  # noqa: E402
import funcgrad.nn.functional as F  # noqa: E402
from funcgrad.viz import has_dot  # noqa: E402


def _mlp_with_frozen_layer(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 8), lib.nn.ReLU(),
                          lib.nn.Linear(8, 3))
    for p in m[2].parameters():  # a frozen middle layer: its bias must not seem to feed anything
        p.requires_grad_(False)
    out = lib.nn.functional.mse_loss(m(lib.ones(2, 4)), lib.zeros(2, 3))
    return out, dict(m.named_parameters())


def _residual(lib):
    lib.manual_seed(0)
    inp, b1, b2, head = (lib.nn.Linear(4, 8), lib.nn.Linear(8, 8), lib.nn.Linear(8, 8), lib.nn.Linear(8, 2))
    h = inp(lib.ones(2, 4)).relu()
    h = h + b2(b1(h).relu())  # the skip edge spans three rows
    h = h + b2(h).tanh()
    params = {f"{k}.{n}": p for k, mod in [("inp", inp), ("block.0", b1), ("block.2", b2), ("head", head)]
              for n, p in mod.named_parameters()}
    return head(h).sum(), params


def _lstm_step(lib):
    lib.manual_seed(0)
    w_ih, w_hh = lib.randn(16, 3, requires_grad=True), lib.randn(16, 4, requires_grad=True)
    bias = lib.zeros(16, requires_grad=True)
    x, h, c = lib.ones(2, 3), lib.zeros(2, 4), lib.zeros(2, 4)
    i, f, g, o = (x @ w_ih.t() + h @ w_hh.t() + bias).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return h.sum() + c.sum(), {"lstm.weight_ih_l0": w_ih, "lstm.weight_hh_l0": w_hh, "lstm.bias": bias}


def _long_name(lib):
    w = lib.ones(3, requires_grad=True)
    return (w * 2).exp().sum(), {"encoder.layers.11.self_attention.out_proj.weight": w}


def _classifier(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))
    return lib.nn.functional.cross_entropy(m(lib.ones(2, 4)), lib.tensor([0, 2])), dict(m.named_parameters())


GRAPHS = {"classifier": _classifier, "mlp_frozen": _mlp_with_frozen_layer, "residual": _residual, "lstm_step": _lstm_step,
          "long_name": _long_name}


def _clips(p, q, box, eps=0.5):
    """Whether segment p-q enters the interior of box (x, y, w, h) shrunk by eps (Liang-Barsky)."""
    x0, y0, w, h = box
    lo, hi = 0.0, 1.0
    dx, dy = q[0] - p[0], q[1] - p[1]
    for d, a, b in ((dx, p[0] - (x0 + eps), (x0 + w - eps) - p[0]), (dy, p[1] - (y0 + eps), (y0 + h - eps) - p[1])):
        for num, den in ((a, -d), (b, d)):  # constraint: den * t <= num
            if den == 0:
                if num < 0:
                    return False
            elif den > 0:
                hi = min(hi, num / den)
            else:
                lo = max(lo, num / den)
    return lo < hi


def _parse(svg):
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    boxes = {r.get("data-id"): tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))
             for r in root.iter(ns + "rect") if r.get("class") == "node"}
    edges = [(e.get("data-from"), e.get("data-to"),
              [tuple(map(float, pt.split(","))) for pt in e.get("points").split()])
             for e in root.iter(ns + "polyline")]
    texts = [t.text for t in root.iter(ns + "text")]
    return boxes, edges, texts


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_builtin_layout_edges_never_cross_a_box_and_labels_are_whole(name):
    g = make_dot(*GRAPHS[name](torch))
    boxes, edges, texts = _parse(g.svg(layout="builtin"))
    assert len(boxes) == len(g.nodes) and len(edges) == len(g.edges)
    for a, b, pts in edges:
        assert pts[0][1] == boxes[a][1] + boxes[a][3] and pts[-1][1] == boxes[b][1]  # bottom -> top
        for p, q in zip(pts, pts[1:]):
            hit = [i for i, box in boxes.items() if _clips(p, q, box)]
            assert not hit, f"edge {a}->{b} segment {p}-{q} crosses box(es) {hit}"
    # whole labels, every line of every node, and each box wide enough for its text
    assert sorted(texts) == sorted(line for n in g.nodes for line in n["label"].split("\n"))
    for n in g.nodes:
        assert boxes[n["id"]][2] >= 6.6 * max(map(len, n["label"].split("\n")))
    # arrowheads arrive at distinct points of their box's top side; tails leave distinct points
    for k in (0, -1):
        ends = [(a if k == 0 else b, pts[k]) for a, b, pts in edges]
        assert len(set(ends)) == len(ends)
    # no two boxes overlap
    items = list(boxes.values())
    for i, (x, y, w, h) in enumerate(items):
        for (x2, y2, w2, h2) in items[i + 1:]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y


def test_long_labels_are_not_cut():
    g = make_dot(*_long_name(torch))
    assert "encoder.layers.11.self_attention.out_proj.weight" in g.svg(layout="builtin")
    assert "encoder.layers.11.self_attention.out_proj.weight" in g.source


def test_frozen_parameters_are_not_drawn():
    _, params = _mlp_with_frozen_layer(torch)
    g = make_dot(*_mlp_with_frozen_layer(torch))
    names = {n["label"].split("\n")[0] for n in g.nodes}
    assert "2.bias" not in names and "2.weight" not in names and {"0.bias", "4.bias"} <= names


def _torch_names(t):
    seen, names, stack = set(), [], [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if fn.name() != "torch::autograd::AccumulateGrad":
            names.append(fn.name())
        stack.extend(c for c, _ in fn.next_functions)
    return sorted(names)


# cross_entropy: PyTorch records NllLossBackward0 <- LogSoftmaxBackward0, funcgrad NllLossBackward0 alone
_GAPS: dict = {}


@pytest.mark.torch
@pytest.mark.parametrize("name", [pytest.param(n, marks=_GAPS[n]) if n in _GAPS else n for n in sorted(GRAPHS)])
def test_node_names_are_pytorchs(name):
    real = pytest.importorskip("torch")
    g = make_dot(*GRAPHS[name](torch))
    ops = sorted(n["label"].split("\n")[0] for n in g.nodes if n["color"] != LEAF)
    assert ops == _torch_names(GRAPHS[name](real)[0])


def test_dot_layout_missing_says_how_to_install(monkeypatch):
    import funcgrad.viz as viz
    monkeypatch.setattr(viz, "has_dot", lambda: False)
    g = make_dot(*_long_name(torch))
    with pytest.raises(RuntimeError, match=r"apt-get install graphviz"):
        g.svg(layout="dot")
    assert g.svg().startswith("<svg")  # auto falls back to the built-in layout
    with pytest.raises(ValueError, match="layout must be"):
        g.svg(layout="neato")


@pytest.mark.skipif(not has_dot(), reason="Graphviz's dot program is not installed (apt-get install graphviz)")
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_dot_layout_has_every_node_and_whole_label(name, tmp_path):
    g = make_dot(*GRAPHS[name](torch))
    root = ET.fromstring(g.svg(layout="dot"))
    ns = "{http://www.w3.org/2000/svg}"
    groups = [e for e in root.iter(ns + "g") if e.get("class") == "node"]
    edges = [e for e in root.iter(ns + "g") if e.get("class") == "edge"]
    assert len(groups) == len(g.nodes) and len(edges) == len(g.edges)
    texts = sorted(t.text for grp in groups for t in grp.iter(ns + "text"))
    assert texts == sorted(line for n in g.nodes for line in n["label"].split("\n"))
    with open(g.render(str(tmp_path / "g.png")), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
