"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (whole stacks as one scan op each) and their cells.

Parameter names, shapes, gate order and initialisation are PyTorch's, so ``state_dict``s load
across. The graph is dynamic: each call may have its own sequence length.
"""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp

from ... import _dtype, _factories
from ..._dispatch import apply
from ..._ops import nn_rnn as _k
from ..._random import _sample
from .. import init
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import _layout, _lengths
from ..utils.rnn import PackedSequence, _pack_like, _unpack_for_rnn

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _empty(*shape, device=None, dtype=None):
    return _factories.empty(*shape, device=device, dtype=dtype or _dtype.get_default_dtype())


class RNNBase(Module):
    """Common base of ``RNN``, ``LSTM`` and ``GRU`` (PyTorch's ``nn.RNNBase``)."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability "
                             "of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero "
                          f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", UserWarning, stacklevel=3)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gate = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else real_hidden * dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                params = [("weight_ih" + sfx, (gate, in_size)), ("weight_hh" + sfx, (gate, real_hidden))]
                if bias:
                    params += [("bias_ih" + sfx, (gate,)), ("bias_hh" + sfx, (gate,))]
                if proj_size > 0:
                    params += [("weight_hr" + sfx, (proj_size, hidden_size))]
                for name, shape in params:
                    setattr(self, name, Parameter(_empty(*shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def flatten_parameters(self) -> None:
        """No-op (cuDNN weight packing has no JAX counterpart)."""

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- forward -------------------------------------------------------------------------------
    def _run(self, input, hx):
        packed = isinstance(input, PackedSequence)
        lengths = None
        if packed:
            pk = input
            input, lengths, batch = _unpack_for_rnn(pk)  # (T, B, *) in sorted order
            unbatched = False
            if hx is not None:
                hx = _permute_hidden(hx, pk.sorted_indices)
        else:
            if input.ndim not in (2, 3):
                raise ValueError(f"{self.mode.replace('_TANH', '').replace('_RELU', '')}: Expected input "
                                 f"to be 2D or 3D, got {input.ndim}D instead")
            unbatched = input.ndim == 2
            if unbatched:
                input = input.unsqueeze(1)
                if hx is not None:
                    hx = tuple(h.unsqueeze(1) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(1)
            elif self.batch_first:
                input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        dirs = 2 if self.bidirectional else 1
        n = input.shape[1]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape = (self.num_layers * dirs, n, real_hidden)
        c_shape = (self.num_layers * dirs, n, self.hidden_size)
        if hx is None:
            dev = "meta" if input.is_meta else None  # (else the default device, as before)
            h0 = _factories.zeros(*h_shape, dtype=input.dtype, device=dev)
            c0 = _factories.zeros(*c_shape, dtype=input.dtype, device=dev) if self.mode == "LSTM" else None
        elif self.mode == "LSTM":
            h0, c0 = hx
            _check_hidden(h0, h_shape, "Expected hidden[0] size")
            _check_hidden(c0, c_shape, "Expected hidden[1] size")
        else:
            h0, c0 = hx, None
            _check_hidden(h0, h_shape, "Expected hidden size")
        p = self.dropout if self.training else 0.0
        noise = None
        if p > 0 and self.num_layers > 1:
            noise = _inter_layer_noise(p, self.num_layers - 1, input, real_hidden * dirs,
                                       pk if packed else None)
        lens = None if lengths is None else lengths
        kw = dict(num_layers=self.num_layers, bidirectional=self.bidirectional, has_bias=self.bias,
                  has_proj=self.proj_size > 0, dropout=p, train=self.training)
        w = self._flat_weights
        if self.mode == "LSTM":
            out, h, c = apply(_k.lstm, input, h0, c0, noise, lens, *w, **kw)
            hidden = (h, c)
        elif self.mode == "GRU":
            out, h = apply(_k.gru, input, h0, noise, lens, *w, **kw)
            hidden = h
        else:
            nl = "tanh" if self.mode == "RNN_TANH" else "relu"
            out, h = apply(_k.rnn, input, h0, noise, lens, *w, nonlinearity=nl, **kw)
            hidden = h
        if out.grad_fn is not None:  # PyTorch's node names for the assembled results
            if self.bidirectional:
                out = apply(_k.rnn_cat_directions, out)
            if self.mode == "LSTM":
                hidden = tuple(apply(_k.rnn_stacked_states, t) for t in hidden)
        if packed:
            out = _pack_like(out, pk)
            hidden = _permute_hidden(hidden, pk.unsorted_indices)
            return out, hidden
        if unbatched:
            out = out.squeeze(1)
            hidden = tuple(t.squeeze(1) for t in hidden) if isinstance(hidden, tuple) else hidden.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, hidden


def _inter_layer_noise(p, n, input, width, packed):
    """The dropout noise of the ``n`` layer outputs between layers, drawn as PyTorch's
    ``apply_layer_stack`` draws it: ``dropout(layer_output)`` after each layer but the last, on
    the sequence-first ``(L, N, width)`` output, or on a packed sequence's data ``(rows, width)``
    (its rows are scattered back into the padded batch the kernel runs on). Nothing else draws
    between the layers, so the ``n`` masks are one draw, layer after layer."""
    L, N = input.shape[0], input.shape[1]
    if packed is None:
        return _sample.dropout_noise(None, (n, L, N, width), p, input.dtype.np)
    _, t_idx, b_idx = _layout(_lengths(packed))
    rows = _sample.dropout_noise(None, (n, t_idx.size, width), p, input.dtype.np)
    return jnp.zeros((n, L, N, width), rows.dtype).at[:, t_idx, b_idx].set(rows)


def _check_hidden(h, shape, what):
    if tuple(h.shape) != shape:
        raise RuntimeError(f"{what} {shape}, got [{', '.join(map(str, h.shape))}]")


def _permute_hidden(hx, idx):
    if idx is None:
        return hx
    if isinstance(hx, tuple):
        return tuple(h.index_select(1, idx) for h in hx)
    return hx.index_select(1, idx)


class RNN(RNNBase):
    """Elman RNN ``h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)`` (or ReLU).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> rnn = nn.RNN(4, 3, num_layers=2)
    >>> out, h = rnn(funcgrad.randn(5, 2, 4))
    >>> tuple(out.shape), tuple(h.shape)
    ((5, 2, 3), (2, 2, 3))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s + (", nonlinearity='relu'" if self.nonlinearity != "tanh" else "")

    def forward(self, input, hx=None):
        return self._run(input, hx)


class LSTM(RNNBase):
    """LSTM with PyTorch's gates ``i, f, g, o``; returns ``(output, (h_n, c_n))``.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> lstm = nn.LSTM(4, 3, batch_first=True)
    >>> out, (h, c) = lstm(funcgrad.randn(2, 5, 4))
    >>> tuple(out.shape), tuple(h.shape), tuple(c.shape)
    ((2, 5, 3), (1, 2, 3), (1, 2, 3))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)

    def forward(self, input, hx=None):
        return self._run(input, hx)


class GRU(RNNBase):
    """GRU with PyTorch's gates ``r, z, n``, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)

    def forward(self, input, hx=None):
        return self._run(input, hx)


# ---- cells ------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(_empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(_empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(_empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prep(self, input, hx, name):
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        n = input.shape[0]
        if hx is None:
            z = _factories.zeros(n, self.hidden_size, dtype=input.dtype,
                                 device="meta" if input.is_meta else None)
            hx = (z, z) if isinstance(self, LSTMCell) else z
        elif not batched:
            hx = tuple(h.unsqueeze(0) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(0)
        return input, hx, batched


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx, "RNNCell")
        if self.nonlinearity == "tanh":
            op = _k.rnn_tanh_cell
        elif self.nonlinearity == "relu":
            op = _k.rnn_relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = apply(op, x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> h, c = nn.LSTMCell(4, 3)(funcgrad.randn(2, 4))
    >>> tuple(h.shape)
    (2, 3)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prep(input, hx, "LSTMCell")
        h, c = apply(_k.lstm_cell, x, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx, "GRUCell")
        out = apply(_k.gru_cell, x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
