"""The OpInfo-style sweep (tests/opinfo): every op of the table against PyTorch.

One test per sample family sweeps its samples, compares each with torch (values, dtype, shape,
``grad_fn`` name, raising, float64 gradient) and fails on any mismatch that is not in
``tests/opinfo/allowlist.py``, or on an allowlist entry that no longer matches anything. Each
family records its totals; ``tests/conftest.py`` prints the sum at the end of the run (with
pytest-xdist too: the numbers travel with the test reports).
"""

from __future__ import annotations

import importlib
import json

import pytest

import funcgrad
from funcgrad._ops import OPS

from .opinfo import allowlist, compare, run

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from .opinfo import mirror  # noqa: E402

# a family: a module of tests/opinfo with SAMPLES, or one spec module's rows (mirror:<module>)
FAMILIES = ["pointwise", "reduce"] + [f"mirror:{m}" for m in mirror.GROUPS]


class _Group:
    def __init__(self, samples):
        self.SAMPLES = samples


def _family(name):
    if name.startswith("mirror:"):
        return _Group(mirror.GROUPS[name.split(":")[1]])
    return importlib.import_module(f"tests.opinfo.{name}")


def test_every_op_has_samples_or_a_reason():
    assert not mirror.UNTRANSLATED, f"spec rows with no PyTorch spelling: {mirror.UNTRANSLATED}"
    covered, excluded = set(), dict(allowlist.EXCLUDED)
    for name in FAMILIES:
        covered |= {s.op for s in _family(name).SAMPLES}
    missing = sorted(set(OPS) - covered - set(excluded))
    assert not missing, f"ops with no OpInfo sample and no exclusion reason: {missing}"
    unknown = sorted((covered | set(excluded)) - set(OPS))
    assert not unknown, f"samples/exclusions naming ops that are not in the op table: {unknown}"
    both = sorted(covered & set(excluded))
    assert not both, f"excluded ops that do have samples (drop the exclusion): {both}"
    for k, why in list(allowlist.EXCLUDED.items()) + list(allowlist.ALLOWED.items()):
        assert why.strip(), f"{k}: an exclusion/allowlist entry needs its reason"


def test_sample_keys_are_unique():
    for name in FAMILIES:
        keys = [s.key for s in _family(name).SAMPLES]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        assert not dup, f"{name}: duplicate sample ids {dup}"


# the two big families are swept in independent parts, whole ops per part (an op's allowlist
# entries are checked for staleness in the part holding all its samples): one long test at the end
# of a pytest-xdist run would leave the other workers idle
PARTS = {"pointwise": 4, "reduce": 2}
SWEEPS = [(f, k) for f in FAMILIES for k in range(PARTS.get(f, 1))]


def _part(family, k):
    samples = _family(family).SAMPLES
    n = PARTS.get(family, 1)
    ops = sorted({s.op for s in samples})
    mine = set(ops[k::n])
    return [s for s in samples if s.op in mine]


def test_parts_cover_each_family_once():
    for family in FAMILIES:
        parts = [_part(family, k) for k in range(PARTS.get(family, 1))]
        assert sorted(s.key for p in parts for s in p) == sorted(s.key for s in _family(family).SAMPLES)
        assert all(parts), f"{family}: an empty part"
        for i, p in enumerate(parts):
            for q in parts[i + 1:]:
                assert not {s.op for s in p} & {s.op for s in q}, f"{family}: an op split across parts"


@pytest.mark.parametrize("family,part", SWEEPS,
                         ids=[f if PARTS.get(f, 1) == 1 else f"{f}-{k + 1}of{PARTS[f]}" for f, k in SWEEPS])
def test_sweep(family, part, record_property):
    samples = _part(family, part)
    funcgrad.set_default_dtype(funcgrad.float32)
    failing, allowed, used = [], 0, set()
    mismatches = 0
    for s in samples:
        for kind, detail in compare(s, run(funcgrad, s), run(torch, s)):
            mismatches += 1
            k = allowlist.match(s, kind)
            if k is None:
                failing.append(f"{s.key} [{kind}] {detail}")
            else:
                allowed += 1
                used.add(k)
    stale = sorted(k for k in allowlist.ALLOWED if k.split("/")[0] in {s.op for s in samples}
                   and allowlist.family_of(k, samples) and k not in used and k not in allowlist.PLATFORM)
    record_property("opinfo_totals", json.dumps({
        "family": family, "part": part, "ops": len({s.op for s in samples}), "samples": len(samples),
        "mismatches": mismatches, "allowlisted": allowed, "failing": len(failing)}))
    msg = "\n".join(failing[:200])
    assert not failing, f"{len(failing)} mismatches with PyTorch (not allowlisted):\n{msg}"
    assert not stale, f"allowlist entries that match no mismatch any more (remove them): {stale}"
