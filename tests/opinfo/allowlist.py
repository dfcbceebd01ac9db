"""Known differences from PyTorch, each with the reason funcgrad differs.

``ALLOWED`` keys are ``"<op>/<sample id glob>:<kind>"`` (kind: raises, dtype, value, shape,
grad_fn, requires_grad, grad, outputs, type). A reason for a genuine, not yet fixed bug starts
with "BUG (issue 14, not fixed yet):"; everything else is a deliberate or unavoidable difference.
An entry that matches no mismatch any more fails the sweep (remove it once fixed).

``EXCLUDED``: op keys with no sample, and why.
"""

from __future__ import annotations

import fnmatch

BUG = "BUG (issue 14, not fixed yet): "

ALLOWED: dict[str, str] = {
}

EXCLUDED: dict[str, str] = {
}


def _split(k):
    pat, _, kind = k.rpartition(":")
    return pat, kind


def match(sample, kind):
    """The allowlist key covering this mismatch of ``sample`` (None: not allowlisted)."""
    for k in ALLOWED:
        pat, kd = _split(k)
        if kd == kind and fnmatch.fnmatchcase(sample.key, pat):
            return k
    return None


def family_of(k, samples):
    """Whether key ``k`` names a sample of ``samples`` (so that family checks it for staleness)."""
    pat, _ = _split(k)
    return any(fnmatch.fnmatchcase(s.key, pat) for s in samples)
