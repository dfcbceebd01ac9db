"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``,
and the deprecated ``Container``."""

from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import islice
from typing import Any, Iterable, Iterator

from ..._tensor import Tensor
from .._deprecated import deprecated_class
from ..module import Module, _addindent
from ..parameter import Parameter


def _index(idx: int, n: int) -> int:
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


class _ModuleSequence:
    """What ``Sequential`` and ``ModuleList`` share: modules numbered ``"0"``, ``"1"``…"""

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        if isinstance(idx, slice):
            for k in keys[idx]:
                delattr(self, k)
        else:
            delattr(self, keys[_index(idx, len(self))])
        self._renumber(list(self._modules.values()))  # contiguous numbering, as PyTorch

    def _renumber(self, items) -> None:
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int) -> Module:
        v = self[key]
        del self[key]
        return v


class Sequential(_ModuleSequence, Module):
    """Modules applied in order; indexable, sliceable, appendable.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> model = nn.Sequential(nn.Linear(4, 2), nn.ReLU())
    >>> model
    Sequential(
      (0): Linear(in_features=4, out_features=2, bias=True)
      (1): ReLU()
    )
    >>> model(funcgrad.zeros(3, 4)).shape
    funcgrad.Size([3, 2])
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self))
        return next(islice(iter(self._modules.values()), i, None))

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self))]
        setattr(self, key, module)

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def insert(self, index: int, module: Module) -> "Sequential":
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(_ModuleSequence, Module):
    """A list of modules whose parameters are registered (iterate it in ``forward``).

    >>> from funcgrad import nn
    >>> nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])
    ModuleList(
      (0-1): 2 x ReLU()
      (2): Tanh()
    )
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(idx, len(self))), module)

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if not hasattr(modules, "__iter__"):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def __repr__(self) -> str:
        # runs of identical reprs are compressed: "(0-1): 2 x ReLU()" (PyTorch's format)
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                body = _addindent(reprs[start], 2)
                if i - start == 1:
                    lines.append(f"({start}): {body}")
                else:
                    lines.append(f"({start}-{i - 1}): {i - start} x {body}")
                start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules whose parameters are registered."""

    def __init__(self, modules: dict | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        items = modules.items() if isinstance(modules, (dict, ModuleDict)) else modules
        for j, kv in enumerate(items):
            if not isinstance(kv, (tuple, list)) or len(kv) != 2:
                if isinstance(kv, (tuple, list)):
                    raise ValueError(f"ModuleDict update sequence element #{j} has length {len(kv)}; 2 is required")
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is "
                                + type(kv).__name__)
            self[kv[0]] = kv[1]


def _param_repr(p) -> str:
    size = "x".join(str(s) for s in p.shape)
    dev = "" if p.device.type == "cpu" else f" ({p.device})"
    kind = "Parameter containing" if isinstance(p, Parameter) else "Tensor"
    return f"{kind}: [funcgrad.{p.dtype.name} of size {size}{dev}]"


class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped in ``Parameter``)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _convert(self, v):
        if isinstance(v, Tensor) and not isinstance(v, Parameter):
            v = Parameter(v)
        return v

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, self._size)))

    def __setitem__(self, idx: int, param) -> None:
        setattr(self, str(_index(idx, self._size)), self._convert(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters) -> "ParameterList":
        return self.extend(parameters)

    def append(self, value) -> "ParameterList":
        i = self._size
        self._size += 1
        setattr(self, str(i), self._convert(value))
        return self

    def extend(self, values) -> "ParameterList":
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): " + (_param_repr(p) if isinstance(p, Tensor) else
                                        f"Object of type: {type(p).__name__}")
                         for i, p in enumerate(self))

    def __repr__(self) -> str:
        if not len(self):
            return "ParameterList()"
        return "ParameterList(\n" + "\n".join("  " + line for line in self.extra_repr().split("\n")) + "\n)"


class ParameterDict(Module):
    """An ordered dict of parameters (plain tensors are wrapped in ``Parameter``)."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key: str, default=None):
        return self[key] if key in self else default

    def pop(self, key: str):
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def update(self, parameters) -> None:
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): " + (_param_repr(p) if isinstance(p, Tensor) else
                                        f"Object of type: {type(p).__name__}") for k, p in self.items())

    def __repr__(self) -> str:
        if not len(self):
            return "ParameterDict()"
        return "ParameterDict(\n" + "\n".join("  " + line for line in self.extra_repr().split("\n")) + "\n)"


@deprecated_class("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                  "Subclass that instead.")
class Container(Module):
    """Deprecated (PyTorch's ``FutureWarning``): a ``Module`` whose keyword arguments are its children.

    >>> import warnings
    >>> from funcgrad import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     nn.Container(act=nn.ReLU())
    Container(
      (act): ReLU()
    )
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
