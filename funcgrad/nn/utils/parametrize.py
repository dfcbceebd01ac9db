"""``nn.utils.parametrize``: a tensor of a module computed from other tensors on every access
(PyTorch's ``register_parametrization``). The originals live in
``module.parametrizations[<name>]`` (a ``ParametrizationList``) as ``original`` or, when the
parametrization's ``right_inverse`` returns several tensors, ``original0``, ``original1``…, so
``state_dict`` keys are PyTorch's. As in PyTorch, the module's class becomes a fresh subclass
``Parametrized<Class>`` of its own (no existing class is changed) that holds the properties."""

from __future__ import annotations

from collections.abc import Sequence

from ...autograd import grad_mode
from ..._tensor import Tensor
from ..layers.container import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "ParametrizationList",
           "type_before_parametrizations"]


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its original tensor(s)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with grad_mode.no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    new = m.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and (new.dtype is not original.dtype or tuple(new.shape) != tuple(original.shape)):
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            self._register_original("original", new, original)
        else:
            for i, t in enumerate(new):
                self._register_original(f"original{i}", t, original)

    def _register_original(self, name, value, original):
        if isinstance(original, Parameter):
            self.register_parameter(name, Parameter(value.detach(), original.requires_grad))
        else:
            self.register_buffer(name, value.detach())

    def right_inverse(self, value: Tensor) -> None:
        """Write the originals so that the parametrized tensor becomes ``value``."""
        with grad_mode.no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                       f"right_inverse.")
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _inject_new_class(module: Module) -> None:
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"_parametrized_base": cls})


def _inject_property(module: Module, name: str) -> None:
    def get(self):
        return self.parametrizations[name]()

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)
    setattr(module.__class__, name, property(get, set_))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` (or its tensor ``tensor_name``) has a parametrization."""
    p = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(p, ModuleDict):
        return False
    return len(p) > 0 if tensor_name is None else tensor_name in p


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before any parametrization was registered."""
    if not is_parametrized(module):
        return type(module)
    return type(module).__dict__.get("_parametrized_base", type(module))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the value of ``parametrization(original)`` on every access.

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> class Symmetric(nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).transpose(-1, -2)
    >>> m = nn.utils.parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    >>> type(m).__name__, list(m.state_dict())
    ('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
    >>> bool((m.weight == m.weight.T).all())
    True
    """
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        return module
    if tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
        return module
    raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                     f"name '{tensor_name}'")


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization`: ``<tensor_name>`` becomes a plain parameter again,
    with its current parametrized value (``leave_parametrized``) or its original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    with grad_mode.no_grad():
        if leave_parametrized:
            t = getattr(module, tensor_name)
        elif plist.is_tensor:
            t = plist.original
        else:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        requires_grad = (plist.original if plist.is_tensor else plist.original0).requires_grad
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    module.register_parameter(tensor_name, Parameter(t.detach(), requires_grad))
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__._parametrized_base
    return module
