"""The main job, ``python -m funcgrad.examples.train``: arguments, output, exit codes, files.

Argument errors are checked in-process (argparse exits with status 2 before any training); the
runs use tiny ``--steps`` so each takes seconds; one subprocess checks piped output and Ctrl-C.
"""

import os
import re
import signal
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")

from funcgrad.examples import train  # noqa: E402
from funcgrad.viz import has_dot  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BAD_ARGS = [  # (argv, what the error message says)
    (["--epochs", "0"], "--epochs: must be at least 1, got 0"),
    (["--epochs", "-2"], "--epochs: must be at least 1, got -2"),
    (["--batch-size", "0"], "--batch-size: must be at least 1, got 0"),
    (["--batch-size", "5000"], "--batch-size 5000 is larger than the 1437 training images"),
    (["--steps", "0"], "--steps: must be at least 1, got 0"),
    (["--graph", "g.txt"], "unknown picture format '.txt'"),
    (["--graph", "g"], "unknown picture format '(none)'"),
    (["--graph", "/no/such/dir/g.svg"], "no such directory"),
]


@pytest.mark.parametrize("argv,message", BAD_ARGS, ids=[" ".join(a) for a, _ in BAD_ARGS])
def test_bad_arguments_are_refused_before_training(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(train, "run", _must_not_run)
    with pytest.raises(SystemExit) as e:
        train.main(argv + ["--no-pytorch"])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert message in err and out == ""


def test_png_without_graphviz_is_refused_before_training(capsys, monkeypatch):
    monkeypatch.setattr(train, "run", _must_not_run)
    monkeypatch.setattr(train.funcgrad.viz, "has_dot", lambda: False)
    with pytest.raises(SystemExit) as e:
        train.main(["--graph", "g.png"])
    assert e.value.code == 2
    assert "needs Graphviz's 'dot' program (apt-get install graphviz)" in capsys.readouterr().err


def _must_not_run(*a, **k):
    raise AssertionError("training started before the arguments were checked")


ROW = re.compile(r"^ *(eager|compiled|PyTorch): test accuracy [\d.]+%  (\d+) steps in [\d.]+ s total "
                 r"\(the first 3 steps, which trace/compile/warm up: [\d.]+ s\); (.*)$")


def _rows(out):
    return {m.group(1): (int(m.group(2)), m.group(3)) for m in map(ROW.match, out.splitlines()) if m}


def test_compiled_run_writes_the_graph_it_is_asked_for(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train.main(["--compiled", "--no-pytorch", "--steps", "5", "--graph", "sub.svg"])
    out = capsys.readouterr().out
    assert _rows(out) == {"compiled": (5, _rows(out)["compiled"][1])}
    assert re.fullmatch(r"\d+ steps/s steady state", _rows(out)["compiled"][1])
    with open(tmp_path / "sub.svg") as f:
        svg = f.read()
    assert "AddmmBackward0" in svg and "1.weight" in svg and "NllLossBackward0" in svg
    assert sorted(os.listdir(tmp_path)) == ["sub.svg"]  # nothing else is written
    assert "graph of one step written to sub.svg" in out


def test_default_run_writes_no_file_and_reports_both_times(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train.main(["--eager", "--no-pytorch", "--epochs", "1"])  # one epoch: 22 steps
    out = capsys.readouterr().out
    assert os.listdir(tmp_path) == []
    # the steady state starts after the warm-up steps, not after a first epoch that may not exist
    assert _rows(out)["eager"][0] == 22 and re.fullmatch(r"\d+ steps/s steady state", _rows(out)["eager"][1])
    assert "after the first epoch" not in out and "speed-up" not in out
    train.main(["--eager", "--no-pytorch", "--epochs", "1", "--steps", "2"])
    out = capsys.readouterr().out  # too few steps for a steady state: the output says so
    assert _rows(out) == {"eager": (2, "steady-state rate n/a (needs more than 3 steps)")}
    assert os.listdir(tmp_path) == []


@pytest.mark.torch
def test_pytorch_baseline_row_and_honest_speed_up(capsys):
    pytest.importorskip("torch")
    train.main(["--steps", "6", "--epochs", "1"])
    out = capsys.readouterr().out
    rows = _rows(out)
    assert sorted(rows) == ["PyTorch", "compiled", "eager"] and {n for n, _ in rows.values()} == {6}
    assert re.search(r"^compiled vs eager: [\d.]+x steady state, [\d.]+x in total time "
                     r"\(compilation included\)$", out, re.M)


def test_piped_output_has_no_bar_frames_and_ctrl_c_exits_130():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "funcgrad.examples.train", "--eager", "--no-pytorch",
                             "--epochs", "100000"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()  # printed (flushed) just before training starts
        assert first.startswith("digits: 1437 train / 360 test images"), first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
    assert "\r" not in first + out and "it/s" not in first + out + err  # no tqdm frames in a pipe


@pytest.mark.skipif(not has_dot(), reason="Graphviz's dot program is not installed (apt-get install graphviz)")
def test_png_graph_with_graphviz(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train.main(["--eager", "--no-pytorch", "--steps", "1", "--graph", "g.png"])
    with open(tmp_path / "g.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pseudo-terminal")
def test_terminal_gets_a_bar_whose_rate_is_the_steady_state_one():
    pytest.importorskip("tqdm")
    import fcntl
    import struct
    import termios

    main_fd, tty_fd = os.openpty()
    # a real terminal has a size; tqdm draws nothing on a 0-column one
    fcntl.ioctl(tty_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "funcgrad.examples.train", "--eager", "--no-pytorch",
                             "--steps", "21"], cwd=ROOT, env=env, stdout=tty_fd, stderr=subprocess.PIPE)
    os.close(tty_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    _, err = proc.communicate(timeout=120)
    os.close(main_fd)
    out = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, (out, err)
    assert "eager epoch 1/15" in out and "\r" in out  # tqdm frames
    rates = [int(r) for r in re.findall(r"steady_steps_s=(\d+)", out)]
    assert len(rates) >= 1 and "steps_s=" not in out.replace("steady_steps_s=", "")
    assert re.search(r"21 steps in [\d.]+ s total .*; \d+ steps/s steady state", out)


def test_bench_quick_is_accepted_and_its_subset_exists(monkeypatch, capsys):
    import importlib
    import inspect
    import types

    from funcgrad.bench import __main__ as bench

    for m, kwargs in bench.QUICK.items():  # every quick module exists and takes its arguments
        inspect.signature(importlib.import_module(f"funcgrad.bench.{m}_bench").run).bind(**kwargs)
    calls = []

    def fake_module(name):  # record what --quick runs, without running the benchmarks
        m = name.rsplit(".", 1)[1].removesuffix("_bench")
        return types.SimpleNamespace(run=lambda **kw: calls.append((m, kw)) or [])

    monkeypatch.setattr(bench.importlib, "import_module", fake_module)
    bench.main(["--quick"])
    assert calls == list(bench.QUICK.items())
    assert capsys.readouterr().out.startswith("# funcgrad benchmarks")
