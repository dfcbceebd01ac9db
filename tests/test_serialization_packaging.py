"""Packaging checks from the checkpoint/packaging issue: the licence file matches the declared
licence, no private JAX imports, and init_process_group's ordering error."""

import os
import re

import pytest

import funcgrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_license_file_matches_pyproject():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        meta = tomllib.load(fh)
    project = meta["project"]
    assert project["license"] == "Apache-2.0"  # an SPDX expression (PEP 639), not a table
    assert project["license-files"] == ["LICENSE"]
    with open(os.path.join(ROOT, "LICENSE")) as fh:
        text = fh.read()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text
    # setuptools reads license expressions from 77 on
    req = meta["build-system"]["requires"][0]
    assert int(re.search(r">=(\d+)", req).group(1)) >= 77
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))


# the reasoned exceptions, each guarded (an ImportError/AttributeError falls back to public JAX):
# - _compile_cache.py: JAX has no public hook to install a persistent-cache object (the bounded,
#   atomically written cache); the fallback is JAX's own file cache;
# - _cache.py: JAX has no public way to drop the traced-jaxpr and eager-primitive caches (only
#   jax.clear_caches(), which drops every executable too) or to ask whether a trace is running;
#   the fallback is the clear-everything sweep at backward().
# - _storage.py: the concrete array class (jax.Array is an abstract base: isinstance on it costs
#   the eager hot path, and its .shape/.dtype properties more than .aval); the fallback is a class
#   nothing is an instance of, so every value takes the generic path.
PRIVATE_OK = {os.path.join("funcgrad", "_compile_cache.py"), os.path.join("funcgrad", "_cache.py"),
              os.path.join("funcgrad", "_storage.py"),
              # whether JAX's backend has started (XLA_FLAGS is read then): no public query
              os.path.join("funcgrad", "_xla_flags.py")}


def test_no_private_jax_imports():
    found = []
    for base, _, files in os.walk(os.path.join(ROOT, "funcgrad")):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(base, f)) as fh:
                    if re.search(r"^\s*(from|import)\s+jax\._src", fh.read(), re.M):
                        found.append(os.path.relpath(os.path.join(base, f), ROOT))
    assert [f for f in found if f not in PRIVATE_OK] == []


def test_every_package_folder_has_an_init():
    for base, dirs, files in os.walk(os.path.join(ROOT, "funcgrad")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if any(f.endswith(".py") for f in files):
            assert "__init__.py" in files, base


def test_init_process_group_after_the_backend_started_explains_the_order():
    import funcgrad.distributed as dist
    funcgrad.ones(1)  # the backend runs
    with pytest.raises(RuntimeError, match="JAX's backend is already initialized"):
        dist.init_process_group(world_size=2, rank=0, init_method="tcp://127.0.0.1:1")
    assert not dist.is_initialized()
