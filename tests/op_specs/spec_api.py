"""Spec rows for the ops added for real scripts (issue 18): RNN result nodes, …"""

from __future__ import annotations

from . import Spec


def _apply(name):
    def f(x):
        from funcgrad._dispatch import apply
        from funcgrad._ops import nn_rnn
        return apply(getattr(nn_rnn, name), x)
    return f


SPECS = [
    Spec("rnn_stacked_states", _apply("rnn_stacked_states"), lambda x: x, [(2, 3, 4)], grad_fn="StackBackward0"),
    Spec("rnn_cat_directions", _apply("rnn_cat_directions"), lambda x: x, [(5, 3, 4)], grad_fn="CatBackward0"),
]
