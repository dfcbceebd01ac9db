"""Side-by-side benchmarks: ``python -m funcgrad.bench`` (funcgrad vs hand-written JAX vs PyTorch)."""
