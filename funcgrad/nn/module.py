"""``nn.Module``: the base of every layer — registration of parameters, buffers and submodules,
traversal, ``state_dict``/``load_state_dict``, ``train``/``eval``, dtype/device moves, hooks.

State lives in Tensors whose storage cells the jit bridge tracks, so every in-place change here
(loading a state dict, moving dtype) writes into the existing Parameter/buffer objects instead
of rebinding attributes.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from .. import _dtype, _factories, _structure
from .._tensor import Tensor
from ..autograd import grad_mode
from . import _hooks, _swap
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

_LAZY = (UninitializedParameter, UninitializedBuffer)  # a lazy module's tensors before their first call

_EXTRA_STATE = "_extra_state"  # the state_dict key of get_extra_state()'s value
_HOOK_DICTS = ("_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook: Callable) -> _hooks.RemovableHandle:
    """A forward pre-hook run before every module's forward."""
    return _hooks.add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable) -> _hooks.RemovableHandle:
    """A forward hook run after every module's forward."""
    return _hooks.add_hook(_global_forward_hooks, hook)


_LOADING = threading.local()  # .plans: the plan of each load_state_dict under way in this thread


def _plans() -> list:
    p = getattr(_LOADING, "plans", None)
    if p is None:
        p = _LOADING.plans = []
    return p


def _run_load_plan(plan, assign, undo=None) -> None:
    """Carry out the copies ``Module._load_from_state_dict`` planned: ``(module, name, current,
    source)`` (``name`` None: ``source`` is the module's extra state). ``undo``: a list that gets
    what puts each back (``_undo_load``)."""
    with grad_mode.no_grad():
        for module, name, cur, src in plan:
            if name is None:
                if undo is not None:
                    undo.append((module, None, None, module.get_extra_state()))
                module.set_extra_state(src)
                continue
            if isinstance(cur, _LAZY):
                cur.materialize(src.shape)
            if assign:
                table = module._parameters if isinstance(cur, Parameter) else module._buffers
                if undo is not None:
                    undo.append((module, name, table, cur))
                if isinstance(cur, Parameter):
                    src = src if isinstance(src, Parameter) else Parameter(src, cur.requires_grad)
                table[name] = src
            elif src is not cur:
                if undo is not None:
                    undo.append((module, name, cur, cur.detach().clone()))
                cur.copy_(src)


def _undo_load(undo) -> None:
    """Put back what ``_run_load_plan`` changed (its ``undo`` list), last change first."""
    with grad_mode.no_grad():
        for module, name, cur, old in reversed(undo):
            if name is None:
                module.set_extra_state(old)
            elif type(cur) is dict or isinstance(cur, OrderedDict):
                cur[name] = old
            else:
                cur.copy_(old)


def _raise_load_errors(module, missing, unexpected, errors):
    errors = list(errors)
    if unexpected:
        errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
            ", ".join(f'"{k}"' for k in unexpected)))
    if missing:
        errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
    raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
        type(module).__name__, "\n\t".join(errors)))


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns; prints ``<All keys matched successfully>`` when clean."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, "
                f"unexpected_keys={self.unexpected_keys!r})")

    __str__ = __repr__


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _forward_unimplemented(self, *input: Any) -> None:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


_BOTH_BACKWARD_HOOKS = ("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                        "Please use only one of them.")


class Module:
    """Base class of all neural-network modules (PyTorch's ``torch.nn.Module``).

    >>> import funcgrad
    >>> from funcgrad import nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(2, 1)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> net = Net()
    >>> net
    Net(
      (fc): Linear(in_features=2, out_features=1, bias=True)
    )
    >>> [n for n, _ in net.named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    dump_patches = False
    _version = 1
    training: bool
    forward: Callable[..., Any] = _forward_unimplemented

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        s = object.__setattr__
        s(self, "training", True)
        s(self, "_parameters", {})
        s(self, "_buffers", {})
        s(self, "_non_persistent_buffers_set", set())
        s(self, "_modules", {})
        s(self, "_forward_pre_hooks", OrderedDict())
        s(self, "_forward_pre_hooks_with_kwargs", {})
        s(self, "_forward_hooks", OrderedDict())
        s(self, "_forward_hooks_with_kwargs", {})
        s(self, "_backward_hooks", OrderedDict())
        s(self, "_backward_pre_hooks", OrderedDict())
        s(self, "_state_dict_hooks", OrderedDict())
        s(self, "_state_dict_pre_hooks", OrderedDict())
        s(self, "_load_state_dict_pre_hooks", OrderedDict())
        s(self, "_load_state_dict_post_hooks", OrderedDict())

    # ---- registration ------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's ``running_mean``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"(funcgrad Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (``None`` registers an absent one, e.g. ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            f"(funcgrad.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                             f"must be created explicitly. To express '{name}' as a function of "
                             f"another Tensor, compute the value in the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module, reachable as ``self.<name>``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    @staticmethod
    def _check_name(name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Set the submodule at dotted path ``target`` (its parent must exist); ``strict``: the
        attribute must exist already. PyTorch's errors."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` (``""`` is ``self``)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return p

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    # ---- attribute protocol -----------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__

        def remove_from(*stores):
            for s in stores:
                if s is not None and name in s:
                    if s is d:
                        del d[name]
                        _structure.structure_changed()  # the jit bridge trusts module __dict__s otherwise
                    else:
                        del s[name]

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, d.get("_buffers"), d.get("_modules"), d.get("_non_persistent_buffers_set"))
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"(funcgrad.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, params, d.get("_buffers"), d.get("_non_persistent_buffers_set"))
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    f"(funcgrad.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        f"(funcgrad.nn.Buffer, funcgrad.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in d["_non_persistent_buffers_set"]
                    remove_from(d, params, modules)
                    if name in buffers:
                        del buffers[name]
                    self.register_buffer(name, value, persistent)
                else:
                    if d.get(name, d) is not value:
                        _structure.structure_changed()  # the jit bridge trusts module __dict__s otherwise
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        if name in d.get("_parameters", ()):
            del d["_parameters"][name]
        elif name in d.get("_buffers", ()):
            del d["_buffers"][name]
            d["_non_persistent_buffers_set"].discard(name)
        elif name in d.get("_modules", ()):
            del d["_modules"][name]
        else:
            object.__delattr__(self, name)
            _structure.structure_changed()

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)  # (Module.compile()'s program is not pickled, as PyTorch's)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:  # (a module pickled before these hooks existed)
            self.__dict__.setdefault(name, OrderedDict())

    # ---- traversal ---------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and its submodules), each once.

        >>> from funcgrad import nn
        >>> [tuple(p.shape) for p in nn.Linear(3, 2).parameters()]
        [(2, 3), (2,)]
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    # ---- modes ------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (Dropout active, BatchNorm updates its running stats)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients (to ``None`` by default, as PyTorch 2)."""
        for p in self.parameters():
            if p._grad is not None:
                if set_to_none:
                    p._grad = None
                else:
                    g = p._grad
                    if g._grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    with grad_mode.no_grad():
                        g.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule (children first) and on ``self``; used for custom init."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def share_memory(self) -> "Module":
        return self

    # ---- dtype / device ------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        """Convert every parameter, gradient and buffer in place: each keeps its object identity
        and only its storage changes (optimizers and the jit bridge keep their references)."""
        for m in self.children():
            m._apply(fn)
        swap = _swap.get_swap_module_params_on_conversion()
        overwrite = _swap.get_overwrite_module_params_on_conversion()
        with grad_mode.no_grad():
            for store in (self._parameters, self._buffers):
                for key, t in store.items():
                    if t is None:
                        continue
                    if store is self._parameters and (swap or overwrite):
                        self._convert_param(key, t, fn, swap)
                        continue
                    new = fn(t)
                    if new is not t:
                        t.data = new
                    g = t._grad
                    if g is not None:
                        ng = fn(g)
                        if ng is not g:
                            t._grad = ng
        return self

    def _convert_param(self, key, param, fn, swap):
        """``_apply`` of one parameter under ``funcgrad.__future__``'s switches, as PyTorch's: its
        converted copy swapped into it (``swap_tensors``), or a new ``Parameter`` in its place."""
        grad = param._grad
        if swap:
            try:
                param._grad = None
                _swap.swap_tensors(param, Parameter(fn(param), requires_grad=param.requires_grad))
            except Exception as e:
                param._grad = grad
                raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}") from e
            out = param
        else:
            out = self._parameters[key] = Parameter(fn(param), param.requires_grad)
        if grad is not None:
            new = fn(grad)
            if swap:
                new.requires_grad_(grad.requires_grad)
                try:
                    _swap.swap_tensors(grad, new)
                except Exception as e:
                    raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}.grad") from e
                out._grad = grad
            else:
                out._grad = new.requires_grad_(grad.requires_grad)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Give every parameter and buffer new uninitialised storage (``empty_like``) on ``device``,
        keeping shapes, dtypes and object identity (``recurse=False``: this module's own only).

        >>> from funcgrad import nn
        >>> m = nn.Linear(2, 3).to_empty(device="cpu")
        >>> tuple(m.weight.shape), m.weight.requires_grad
        ((3, 2), True)
        """
        def fn(t):
            return _factories.empty_like(t, device=device)
        if recurse:
            return self._apply(fn)
        with grad_mode.no_grad():
            for store in (self._parameters, self._buffers):
                for t in store.values():
                    if t is not None:
                        t.data = fn(t)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: moves parameters and
        buffers in place; a dtype applies to floating-point tensors only (as PyTorch)."""
        dtype, dev = kwargs.pop("dtype", None), kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() received an invalid combination of arguments - got {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, bool):
                continue
            else:
                dev = a
        if dtype is not None:
            dtype = _dtype.to_dtype(dtype)
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                                f"got desired dtype={dtype}")

        def convert(t):
            out = t
            if dev is not None:
                out = out.to(dev)
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                out = out.to(dtype)
            return out
        return self._apply(convert)

    def _cast_float(self, dtype) -> "Module":
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> "Module":
        return self._cast_float(_dtype.float32)

    def double(self) -> "Module":
        return self._cast_float(_dtype.float64)

    def half(self) -> "Module":
        return self._cast_float(_dtype.float16)

    def bfloat16(self) -> "Module":
        return self._cast_float(_dtype.bfloat16)

    def type(self, dst_type) -> "Module":
        return self._apply(lambda t: t.to(_dtype.to_dtype(dst_type)))

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> "Module":
        return self._apply(lambda t: t.cuda(device))

    # ---- state dict ----------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def get_extra_state(self) -> Any:
        """What a module overriding it adds to its ``state_dict`` (key ``_extra_state``), given back
        to its ``set_extra_state`` by ``load_state_dict``. Not to be called unless overridden."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. Please file an "
            "issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report "
            "this bug.")

    def set_extra_state(self, state: Any) -> None:
        """Takes back what ``get_extra_state`` gave (see there)."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. Please file an "
            "issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report "
            "this bug.")

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> dict:
        """An ``OrderedDict`` of parameters and persistent buffers by dotted name (detached,
        sharing storage with the module's tensors unless ``keep_vars``).

        >>> from funcgrad import nn
        >>> list(nn.BatchNorm1d(3).state_dict())
        ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
        """
        if args:  # legacy positional (destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        for h in self._state_dict_pre_hooks.values():
            h(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for h in self._state_dict_hooks.values():
            r = h(self, destination, prefix, {})
            if r is not None:
                destination = r
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """Load this module's own parameters, buffers and extra state (not its submodules') from
        ``state_dict``, the entries under ``prefix``. PyTorch's extension point: a subclass may
        override it (e.g. to rename an old checkpoint's keys in ``state_dict``) and call
        ``super()._load_from_state_dict``. It runs the load pre-hooks, then checks each entry,
        adding to ``missing_keys``/``unexpected_keys`` (with ``strict``) and ``error_msgs``.

        Within ``load_state_dict`` the copies wait until every module was checked, so an error
        leaves the model unchanged; called on its own, it copies what it could check at once."""
        plans = _plans()
        plan = plans[-1] if plans else []
        self._check_entries(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                            error_msgs, plan)
        if not plans:
            _run_load_plan(plan, False)

    def _check_entries(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors,
                       plan):
        for h in self._load_state_dict_pre_hooks.values():
            h(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors)
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        for name, cur in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            src = state_dict[key]
            if not isinstance(src, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected funcgrad.Tensor '
                              f"or Tensor-like object from checkpoint but received {type(src)}")
                continue
            if isinstance(cur, _LAZY):
                # a lazy module's parameter or buffer takes the checkpoint's shape (PyTorch's
                # _lazy_load_hook; materialized when the plan runs, so an error changes nothing)
                if not isinstance(src, _LAZY):
                    plan.append((self, name, cur, src))
                continue
            if tuple(src.shape) != tuple(cur.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {src.shape} from "
                              f"checkpoint, the shape in current model is {cur.shape}.")
                continue
            if cur.is_meta and not src.is_meta and not local_metadata.get("assign_to_params_buffers"):
                warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta "
                              f"parameter in the current model, which is a no-op. (Did you mean to pass "
                              f"`assign=True` to assign items in the state dictionary to their "
                              f"corresponding key in the module instead of copying them in place?)",
                              UserWarning, stacklevel=2)
            plan.append((self, name, cur, src))
        extra = prefix + _EXTRA_STATE
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra in state_dict:
                plan.append((self, None, None, state_dict[extra]))  # (set after the module's tensors)
            elif strict:
                missing.append(extra)
        elif strict and extra in state_dict:
            unexpected.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra:
                    input_name = key[len(prefix):].split(".", 1)[0]
                    if input_name not in self._modules and input_name not in local:
                        unexpected.append(key)

    def _load_plan(self, state_dict, prefix, metadata, missing, unexpected, errors, assign, order):
        """PyTorch's recursion: this module's ``_load_from_state_dict`` (strict: each module is
        checked strictly), then each submodule's on the entries under its prefix (a copy, as
        PyTorch's, so a module's renaming does not reach its siblings). ``order``: the modules,
        children first (the order of the post-hooks)."""
        local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        self._load_from_state_dict(state_dict, prefix, local_metadata, True, missing, unexpected, errors)
        for name, m in self._modules.items():
            if m is not None:
                p = prefix + name + "."
                m._load_plan({k: v for k, v in state_dict.items() if k.startswith(p)}, p, metadata,
                             missing, unexpected, errors, assign, order)
        order.append((self, len(missing), len(unexpected)))

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module, in place.

        Each module's ``_load_from_state_dict`` checks its entries, then the copies are made; on
        any error (missing/unexpected keys with ``strict``, size mismatch) a ``RuntimeError`` with
        PyTorch's message is raised and nothing changes (where a load post-hook ran, the copies
        it saw are undone). Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``.

        >>> from funcgrad import nn
        >>> a, b = nn.Linear(2, 2), nn.Linear(2, 2)
        >>> b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # (a copy a module's _load_from_state_dict may change)
        if metadata is not None:
            state_dict._metadata = metadata
        missing, unexpected, errors, plan, order = [], [], [], [], []
        # (the keys are checked with strict=False too, and given back: PyTorch loads each module strictly)
        plans = _plans()
        plans.append(plan)
        try:
            self._load_plan(state_dict, "", metadata, missing, unexpected, errors, assign, order)
        finally:
            plans.pop()
        if any(m._load_state_dict_post_hooks for m, _, _ in order):
            # PyTorch runs each module's post-hooks once its submodules are loaded, with the keys
            # found missing or unexpected so far, and a hook may change those lists (to accept a
            # checkpoint, say) before the strict check, and runs them on an erring load too. Here
            # the copies come first, then the hooks in that order, each seeing the lists as
            # PyTorch's would; a load still refused is undone.
            undo = []
            _run_load_plan(plan, assign, undo)
            found = (missing, unexpected)
            missing, unexpected = [], []
            at = (0, 0)
            try:
                for m, n_missing, n_unexpected in order:
                    missing += found[0][at[0]:n_missing]
                    unexpected += found[1][at[1]:n_unexpected]
                    at = (n_missing, n_unexpected)
                    keys = _IncompatibleKeys(missing, unexpected)
                    for h in m._load_state_dict_post_hooks.values():
                        if h(m, keys) is not None:
                            raise AssertionError(
                                "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                "expected to return new values, if incompatible_keys need to be "
                                "modified, it should be done inplace.")
                if strict and (missing or unexpected) or errors:
                    _raise_load_errors(self, missing if strict else (), unexpected if strict else (),
                                       errors)
            except BaseException:
                _undo_load(undo)
                raise
            return _IncompatibleKeys(missing, unexpected)
        if strict and (missing or unexpected) or errors:
            _raise_load_errors(self, missing if strict else (), unexpected if strict else (), errors)
        _run_load_plan(plan, assign)
        return _IncompatibleKeys(missing, unexpected)

    def register_load_state_dict_post_hook(self, hook: Callable) -> _hooks.RemovableHandle:
        return _hooks.add_hook(self._load_state_dict_post_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> _hooks.RemovableHandle:
        return _hooks.add_hook(self._state_dict_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable) -> _hooks.RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module."""
        return _hooks.add_hook(self._state_dict_pre_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> _hooks.RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` runs before ``load_state_dict`` reads this module's entries; it may change
        ``state_dict`` (the copy being loaded, e.g. renaming an old checkpoint's keys) and the lists."""
        return _hooks.add_hook(self._load_state_dict_pre_hooks, hook)

    _register_state_dict_hook = register_state_dict_post_hook

    # ---- hooks ----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> _hooks.RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)``) before ``forward``; it may
        return replacement args (or ``(args, kwargs)``)."""
        h = _hooks.add_hook(self._forward_pre_hooks, hook, prepend,
                            extra=(self._forward_pre_hooks_with_kwargs,))
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        return h

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> _hooks.RemovableHandle:
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after
        ``forward``; it may return a replacement output.

        >>> import funcgrad
        >>> from funcgrad import nn
        >>> m = nn.Identity()
        >>> h = m.register_forward_hook(lambda mod, args, out: out * 2)
        >>> m(funcgrad.ones(2))
        tensor([2., 2.])
        """
        h = _hooks.add_hook(self._forward_hooks, hook, prepend, extra=(self._forward_hooks_with_kwargs,))
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        return h

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> _hooks.RemovableHandle:
        """``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the module's tensor
        inputs are computed; it may return a replacement ``grad_input``."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(_BOTH_BACKWARD_HOOKS)
        object.__setattr__(self, "_is_full_backward_hook", True)
        return _hooks.add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> _hooks.RemovableHandle:
        """``hook(module, grad_output)`` before the module's input gradients are computed; it may
        return a replacement ``grad_output``."""
        return _hooks.add_hook(self._backward_pre_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> _hooks.RemovableHandle:
        """Deprecated: ``hook(module, grad_input, grad_output)`` as a hook of the node that made the
        module's output (PyTorch's non-full hook: ``grad_input`` are that node's input gradients,
        e.g. a Conv2d's input, weight and bias, not the module's inputs'; a FutureWarning at each
        call where they differ). Use ``register_full_backward_hook``."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(_BOTH_BACKWARD_HOOKS)
        object.__setattr__(self, "_is_full_backward_hook", False)
        return _hooks.add_hook(self._backward_hooks, hook, False)

    # ---- call -----------------------------------------------------------------------------------
    _compiled_call_impl = None  # (Module.compile())
    _is_full_backward_hook = None  # True/False once a full/non-full backward hook is registered

    def __call__(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_hooks or _global_forward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """The call without ``compile()``: the forward and its hooks."""
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_hooks or _global_forward_pre_hooks):
            return self.forward(*args, **kwargs)
        for hid, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if isinstance(r, tuple) and len(r) == 2:
                        args, kwargs = r
                    else:
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        full = list(self._backward_hooks.values()) if self._is_full_backward_hook else []
        if full or self._backward_pre_hooks:
            bw = _hooks.BackwardHook(self, full, list(self._backward_pre_hooks.values()))
            args = bw.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        for hid, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
            if hid in self._forward_hooks_with_kwargs:
                r = hook(self, args, kwargs, result)
            else:
                r = hook(self, args, result)
            if r is not None:
                result = r
        if bw is not None:
            result = bw.setup_output_hook(result)
        if self._is_full_backward_hook is False and self._backward_hooks:
            _hooks.non_full_backward_hooks(self, args, result, list(self._backward_hooks.values()))
        return result

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place (``funcgrad.compile(self, ...)``, as PyTorch's
        ``torch.compile(self._call_impl, ...)``): its parameters, ``state_dict`` keys and repr stay
        the module's own; ``copy``/``pickle`` give the module uncompiled."""
        from .._jit import compile as _compile
        compiled = _compile(self, *args, _call=self._call_impl, **kwargs)
        object.__setattr__(self, "_compiled_call_impl", compiled)

    # ---- printing -------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj._type_name()
    return type(obj).__name__


__all__ = ["Module", "register_module_forward_hook", "register_module_forward_pre_hook"]
