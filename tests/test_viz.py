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
