"""``python -m funcgrad.bench [--quick] [--only M ...]``: every benchmark, side by side, as one table.

``--quick`` runs a short subset (fewer repetitions, the smallest sizes, no parallel block): a
smoke test of the benchmarks, not numbers to quote.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import platform

import jax


# --quick: the modules it runs and the arguments of their run()
QUICK = {"core": {}, "train": {"n": 3}, "jit": {"n": 3}, "hardening": {"sizes": (1_000,), "fan_in": 1_000}}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m funcgrad.bench", description=__doc__)
    p.add_argument("--only", nargs="*",
                   help="benchmark modules to run (core, train, jit, parallel, hardening, random, cache)")
    p.add_argument("--quick", action="store_true", help="a short subset with few repetitions (smoke test)")
    p.add_argument("--device", default=None,
                   help="where funcgrad and the hand-written JAX rows run (default: the CPU, as "
                        "funcgrad's default device; e.g. cuda); the PyTorch rows stay on the CPU")
    args = p.parse_args(argv)
    if args.device:
        import funcgrad
        funcgrad.set_default_device(args.device)  # passed on to JAX: the JAX rows run there too
    full = ["core", "train", "jit", "parallel", "hardening", "random", "cache"]
    mods = args.only or (list(QUICK) if args.quick else full)
    print(f"# funcgrad benchmarks — {datetime.date.today()} — {platform.processor() or platform.machine()}, "
          f"jax {jax.__version__}, running on {_where()} "
          f"({jax.device_count()} {jax.default_backend()} device(s))")
    try:
        import torch
        print(f"# PyTorch {torch.__version__} available for comparison")
    except Exception:
        print("# PyTorch not installed: no PyTorch column")
    for m in mods:
        try:
            mod = importlib.import_module(f"funcgrad.bench.{m}_bench")
        except ModuleNotFoundError:
            continue
        rows = mod.run(**QUICK.get(m, {})) if args.quick else mod.run()
        _print(rows)


def _where() -> str:
    from funcgrad._runtime import get_default_device
    return str(get_default_device())


def _print(rows) -> None:
    by_bench: dict = {}
    for r in rows:
        by_bench.setdefault(r["bench"], []).append(r)
    for bench, rs in by_bench.items():
        base = rs[0]["us"]
        print(f"\n{bench}")
        for r in rs:
            note = f"  ({r['note']})" if r.get("note") else ""
            print(f"  {r['impl']:<28} {r['us']:>12.1f} µs   x{r['us'] / base:5.2f} of {rs[0]['impl']}{note}")


if __name__ == "__main__":
    main()
