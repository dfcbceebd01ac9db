"""The Tensor: a jax.Array (or tracer) in a storage cell, a version counter, autograd metadata.

Storage: ``_cell`` holds the current array of the *base* tensor; views (``view``, slicing,
``t()``…) and ``detach()`` share it, so a write through any of them shows in all. A view keeps
the chain of view ops from the base and recomputes (and caches) its value when the cell
changed. Version counter ``_ver`` (a one-item list): shared by views and ``detach()``, not by
``.data``. Nothing here assumes a concrete value, so the same code runs under ``jax.jit``.
"""

from __future__ import annotations

import math
import operator
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from . import _broadcast, _dtype, _grad_mode as grad_mode, _runtime, _strides
from ._device import device as _device_cls
from ._device import from_jax as _from_jax_device
from ._device import jax_device
# storage cells live below the Tensor; re-exported here for the modules that import them
from ._storage import _Cell, _PackedCell, _PlainCell, _raw_gen, _raw_value  # noqa: F401
from ._storage import RAW_TRANSFORM_MSG as RAW_TRANSFORM_MSG
from ._storage import _local as _storage_local
from ._storage import ACTIVE as _storage_active
from ._storage import address as _storage_address
from ._storage import _Array as _Array
from ._storage import new_cell as _new_cell
from ._storage import view_binding as _view_binding
from ._scalars import scalar_arrays
from ._errors import TracedValueError
from ._graph import AccumulateGrad, RemovableHandle
from ._tensor_str import format_meta, format_tensor
from ._meta import MetaArray as _MetaArray
from ._meta import of as _meta_of
from ._meta import refuse_read as _meta_refuse_read
from ._meta import view_value as _meta_view_value

_state = grad_mode._state


class _Above:
    """What the Tensor delegates to the layers above it (they build on the Tensor, so the import
    DAG points up to here, never down): each is registered once, at import time, by the module
    that defines it, through ``register_above``: ``apply`` (funcgrad/_dispatch.py);
    ``rebase_view``, ``refuse_rebase`` (funcgrad/autograd/view_rebase.py); ``to_device``,
    ``_to_copy``, ``expand``, ``COPY_SLICES`` (funcgrad/_ops/shape.py); ``inverse_chain``
    (funcgrad/_ops/inplace_shape.py); ``backward``
    (funcgrad/autograd/__init__.py); ``legacy`` (funcgrad/_legacy.py); ``numpy_of``
    (funcgrad/_numpy_share.py); ``from_numpy`` (funcgrad/_factories.py); ``storage_of``
    (funcgrad/storage.py)."""

    __slots__ = ("apply", "to_device", "_to_copy", "expand", "COPY_SLICES", "backward", "legacy",
                 "numpy_of", "from_numpy", "storage_of", "inverse_chain", "rebase_view",
                 "refuse_rebase")


_above = _Above()
# the active forward-AD level (funcgrad/autograd/forward_ad.py: its tangents, and the hooks of
# dispatch, ``_snapshot``, ``_commit`` and ``__repr__``); None outside ``dual_level``
DUAL: list = [None]


def register_above(**impls) -> None:
    """Register implementations the Tensor calls (see ``_Above``); an unknown name raises."""
    for name, impl in impls.items():
        setattr(_above, name, impl)


_new = object.__new__

SCALAR_GRAD_MSG = ("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                   "behavior.\nConsider using tensor.detach() first.")
_SCALAR_WARNED = [False]


def _warn_scalar_once() -> None:
    """PyTorch's TORCH_WARN_ONCE of ``float(t)``/``complex(t)`` on a tensor that requires grad
    while grad mode is on (``int(t)``, ``.item()`` and calls under ``no_grad`` do not warn): once
    per process (each time under ``set_warn_always``)."""
    if _runtime.warn_once(_SCALAR_WARNED):
        warnings.warn(SCALAR_GRAD_MSG, UserWarning, stacklevel=3)

NON_LEAF_GRAD_MSG = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more informations.")
LEAF_FLAG_MSG = "you can only change requires_grad flags of leaf variables."
LEAF_FLAG_HINT = (" If you want to use a computed variable in a subgraph that doesn't require "
                  "differentiation use var_no_grad = var.detach().")
LEAF_INPLACE_MSG = "a leaf Variable that requires grad is being used in an in-place operation."
NUMPY_GRAD_MSG = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
INFERENCE_INPLACE_MSG = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
    "to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 "
    "for more details.")


class Size(tuple):
    """``x.shape``: a tuple that prints as ``funcgrad.Size([2, 3])``."""
    __module__ = "funcgrad"  # (PyTorch's public path: type(x) prints funcgrad.Size)

    def __repr__(self):
        return f"funcgrad.Size([{', '.join(map(str, self))}])"

    __str__ = __repr__

    def numel(self) -> int:
        return int(np.prod(self, dtype=np.int64))


class _View:
    """How a view derives from its base's cell: ``chain`` of (op, static, dynamic-ints) steps,
    and a cache ``cg``: ``(value, the base cell's generation it was computed at)``, one tuple so
    that it is replaced at once (threads reading one view see a whole pair; a frame's own
    binding of a view lives in the frame, ``_storage.Frame.bind_view``).

    ``owner``: PyTorch's ``_base`` where it is not ``base`` (the storage's root): None for a
    view of the root; False for a tensor PyTorch does not count as a view though it reads the
    storage through a chain (``detach()``/``.data`` of a view; a tensor whose own shape changed
    in place, ``t_``/``unsqueeze_``/``as_strided_``/``resize_``, whose ``base`` then holds the
    storage); else that tensor (a view of such a tensor: its ``_base``, and its autograd base).

    ``ver``: the version counter's value when the view's ``grad_fn`` was last set (PyTorch's
    ``attr_version``; by default the storage's version now). Once the version moved on (a write
    through the base or another view), the node is stale and is made anew from the base's
    current one when next read (``Tensor._fresh``). ``meta``: PyTorch's ``CreationMeta`` where
    it is not DEFAULT: ``NO_GRAD_VIEW`` (made under ``no_grad``, or a view of such a view) or
    ``MULTI_VIEW`` (an output of ``unbind``/``split``/``chunk``…), whose rebase PyTorch refuses."""

    __slots__ = ("base", "chain", "cg", "layout", "owner", "ver", "meta")

    def __init__(self, base, chain, cache, gen, owner=None, ver=None, meta=None):
        self.base, self.chain, self.cg, self.owner = base, chain, (cache, gen), owner
        if ver is None and base._ver is not None:  # (made by a caller that names no version:
            ver = base._ver[0]  # the storage's, shared by the views that read it)
        self.ver, self.meta = ver, meta
        self.layout = None  # (sizes, strides, offset), computed when first asked (_strides.py)

    # (what this thread reads: under a binding frame, the frame's binding of this view if any:
    # the fused backward compares ``gen`` with the base cell's, which the frame binds too)
    @property
    def cache(self):
        b = _view_binding(self) if _storage_active[0] and _storage_local.frame is not None else None
        return self.cg[0] if b is None else b[0]

    @property
    def gen(self):
        b = _view_binding(self) if _storage_active[0] and _storage_local.frame is not None else None
        return self.cg[1] if b is None else b[1]

    def copy(self) -> "_View":
        """Another view info of the same view (``detach()``…), reading what this one reads."""
        new = _View(self.base, self.chain, *self.cg, self.owner, self.ver, self.meta)
        if _storage_active[0]:
            f = _storage_local.frame
            if f is not None:
                f.share_view(self, new)
        return new


NO_GRAD_VIEW, MULTI_VIEW = "no_grad", "multi"  # (_View.meta)

_view_kernels: dict = {}
_scatter_kernels: dict = {}


def _apply_chain(chain, x):
    for op, skey, dyn in chain:
        x = op.fn(x, *dyn, **dict(skey))
    return x


def _shape_of(chain):
    """A chain's steps without their dynamic arguments (``(op, skey, how many)``), and those
    arguments: the kernels below key on the first and take the second as arguments, so that
    ``t[i]`` read or written for each ``i`` compiles once, not once per ``i``; a Python int as
    its reused 0-d array, as apply passes it to the view's own kernel (jit would convert it on
    every call, ~2 us a view read)."""
    steps, args = [], []
    for op, skey, dyn in chain:
        steps.append((op, skey, len(dyn)))
        args += dyn
    return tuple(steps), scalar_arrays(args) if args else ()


def _apply_steps(steps, x, dyn):
    k = 0
    for op, skey, n in steps:
        x = op.fn(x, *dyn[k:k + n], **dict(skey))
        k += n
    return x


def _view_kernel(chain):
    """``(base) -> the view's value`` (its dynamic indices passed to one kernel per chain shape)."""
    steps, dyn = _shape_of(chain)
    k = _view_kernels.get(steps)
    if k is None:
        k = _view_kernels[steps] = jax.jit(lambda b, *d: _apply_steps(steps, b, d))
    return lambda b: k(b, *dyn)


def _scatter_steps(steps, base, new, dyn):
    """``base`` with the view's elements replaced by ``new`` (exact for any dtype): the view's
    steps applied to an arange tell which base elements the view reads."""
    idx = _apply_steps(steps, jnp.arange(base.size).reshape(base.shape), dyn)
    new = jnp.broadcast_to(jnp.asarray(new, base.dtype), idx.shape)
    return base.ravel().at[idx.ravel()].set(new.ravel()).reshape(base.shape)


def _scatter_fn(chain):
    """``(base, new) -> base with the view's elements replaced by new`` (``_scatter_steps``)."""
    steps, dyn = _shape_of(chain)
    return lambda base, new: _scatter_steps(steps, base, new, dyn)


def _scatter_kernel(chain):
    """``(base, new) -> base with the view's elements replaced by new`` (``_scatter_fn``), one
    kernel per chain shape, its dynamic indices passed as arguments (see ``_shape_of``)."""
    steps, dyn = _shape_of(chain)
    k = _scatter_kernels.get(steps)
    if k is None:
        k = _scatter_kernels[steps] = jax.jit(lambda base, new, *d: _scatter_steps(steps, base, new, d))
    return lambda base, new: k(base, new, *dyn)


def _frame_view_value(vi, cell, g):
    """A view's value on a thread in a binding frame whose cache is stale: the frame's binding
    of the view, else computed from the base. A value computed from a base this thread binds
    is kept in the frame, never in the view's shared cache (other threads read that cache; a
    traced value there would also outlive the frame)."""
    b = _view_binding(vi)
    if b is not None and b[1] == g:
        return b[0]
    v = _view_kernel(vi.chain)(cell.value)
    if not _storage_local.frame.cache_view(vi, cell, v, g):
        vi.cg = (v, g)
    return v


def _is_tracer(v) -> bool:
    return isinstance(v, jax.core.Tracer)


class Tensor:
    """A multi-dimensional array with PyTorch's autograd semantics, computed by JAX.

    >>> import funcgrad
    >>> x = funcgrad.ones(2, 2, requires_grad=True)
    >>> y = (x + 2).pow(2).mean()
    >>> y.backward()
    >>> x.grad
    tensor([[1.5000, 1.5000],
            [1.5000, 1.5000]])
    """
    __module__ = "funcgrad"  # (PyTorch's public path: type(x) prints funcgrad.Tensor)

    # Hot attributes are slots; rarely-set ones are class-level defaults (an instance only
    # gets a __dict__ entry when one is set), which keeps creating a tensor cheap.
    __slots__ = ("_cell", "_viewinfo", "_ver", "_requires_grad", "_grad_fn", "__weakref__",
                 "__dict__")
    _output_nr = 0
    _grad = None
    _retains_grad = False
    _hooks = None
    _post_hooks = None
    _accum = None

    # ---- construction ---------------------------------------------------------------------
    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        self._init(None)
        return self

    def __init__(self, *args, **kwargs):
        _above.legacy.legacy_tensor_init(self, args, kwargs)  # Tensor(2, 3), Tensor([1, 2]), Tensor()

    def _init(self, value):
        # a _TracedCell while this thread traces a step (see funcgrad._storage)
        self._cell = _Cell(value) if _storage_local.frame is None else _new_cell(value)
        self._viewinfo = None
        self._ver = [0]
        self._requires_grad = False
        self._grad_fn = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _register_pytree(cls)  # subclasses (Parameter, Buffer) are JAX pytrees too

    @staticmethod
    def _wrap(value) -> "Tensor":
        t = _new(Tensor)  # every op's result is made here: _init and _Cell.__init__ inlined
        # (no frame in any thread: none in this one either, without the thread-local lookup)
        if not _storage_active[0] or _storage_local.frame is None:
            c = t._cell = _new(_Cell)
            c.value, c.gen = value, 0
        else:
            t._cell = _new_cell(value)
        t._viewinfo, t._ver, t._requires_grad, t._grad_fn = None, [0], False, None
        return t

    @staticmethod
    def _make_view(base: "Tensor", value, op, skey, dyn=(), multi=False) -> "Tensor":
        """A view of ``base`` (``multi``: one of several outputs of one op, as ``unbind``'s)."""
        t = object.__new__(Tensor)  # (_init's cell and counter would be replaced: the base's)
        t._requires_grad, t._grad_fn = False, None
        vi = base._viewinfo
        step = (op, skey, tuple(dyn))
        t._cell, ver = base._cell, base._ver
        t._ver = ver
        # PyTorch's CreationMeta, propagated from a view's view where this one's is DEFAULT
        meta = (MULTI_VIEW if multi else None) if _state.enabled else NO_GRAD_VIEW
        if vi is None:
            t._viewinfo = _View(base, (step,), value, base._cell.gen, None,
                                None if ver is None else ver[0], meta)
        else:
            owner = vi.owner
            if meta is None and owner is not False:
                meta = vi.meta
            t._viewinfo = _View(vi.base, vi.chain + (step,), value, base._cell.gen,
                                base if owner is False else owner, None if ver is None else ver[0],
                                meta)
        return t

    def _view_owner(self):
        """The ``owner`` of a view made of this tensor (see ``_View``)."""
        vi = self._viewinfo
        return None if vi is None else (self if vi.owner is False else vi.owner)

    # ---- storage ----------------------------------------------------------------------------
    @property
    def _value(self):
        vi = self._viewinfo
        if vi is None:
            v = self._cell.value
        else:
            cell = self._cell
            c, g = vi.cg, cell.gen
            if c[1] == g:
                v = c[0]
            elif _storage_active[0] and _storage_local.frame is not None:
                v = _frame_view_value(vi, cell, g)  # (this thread's frame may bind the view)
            else:
                try:
                    v = _view_kernel(vi.chain)(cell.value)
                except Exception:
                    if type(cell.value) is not _MetaArray:
                        raise
                    # (a meta base: the view's shape and dtype, funcgrad/_meta.py)
                    v = _meta_view_value(lambda b: _apply_chain(vi.chain, b), cell.value)
                vi.cg = (v, g)
        if _storage_active[0]:  # some thread is in a binding frame: this one records the read
            f = _storage_local.frame
            if f is not None:
                f.read(self._cell, v, self)
        return v

    def _set_value(self, new) -> None:
        """Write ``new`` (already of this shape and dtype) into the storage."""
        cell, vi = self._cell, self._viewinfo
        f = _storage_local.frame
        if f is not None:  # this thread traces a step: it records writes to older cells
            f.write(cell)
        elif self._requires_grad and _is_tracer(new) and self._grad_fn is None \
                and not _is_tracer(cell.value):
            raise RuntimeError(RAW_TRANSFORM_MSG)
        if vi is None:
            cell.value = new
            cell.gen += 1
        else:
            try:
                cell.value = _scatter_kernel(vi.chain)(cell.value, new)
            except Exception:
                if type(cell.value) is not _MetaArray:
                    raise
                new = _meta_of(new)  # (a meta base: its shape stays, no data to write)
            cell.gen += 1
            if f is None or not f.cache_view(vi, cell, new, cell.gen):
                vi.cg = (new, cell.gen)

    def _share(self, ver) -> "Tensor":
        t = object.__new__(Tensor)
        t._init(None)
        t._cell, t._ver = self._cell, ver
        vi = self._viewinfo
        if vi is not None:
            t._viewinfo = vi.copy()
            t._viewinfo.owner = False  # (PyTorch's detach()/.data of a view is not a view)
            if DUAL[0] is not None:  # (detach, .data: a view forward AD does not see through)
                DUAL[0].opaque(t)
        return t

    def _snapshot(self) -> "Tensor":
        """The current value as a separate tensor with this tensor's autograd identity."""
        t = Tensor._wrap(self._value)
        t._requires_grad, t._grad_fn = self._requires_grad, self._grad_fn
        if self._output_nr:
            t._output_nr = self._output_nr
        if self._grad_fn is None and self._requires_grad:
            t._accum = self._accum
            t._edge = self._edge  # leaf: gradient must reach the original leaf
        if DUAL[0] is not None:  # (and its tangent)
            DUAL[0].snapshot(self, t)
        return t

    # ---- basic properties -------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        v = self._value
        return Size(v.aval.shape if type(v) is _Array else v.shape)

    def size(self, dim: int | None = None):
        s = self._value.shape
        if dim is None:
            return Size(s)
        return s[_wrap_dim(dim, len(s))]

    @property
    def dtype(self) -> _dtype.dtype:
        v = self._value
        return _dtype.from_np(v.aval.dtype if type(v) is _Array else v.dtype)

    def dim(self) -> int:
        v = self._value
        return len(v.aval.shape) if type(v) is _Array else v.ndim

    ndimension = dim
    ndim = property(dim)

    def numel(self) -> int:
        return math.prod(self._value.shape)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    @property
    def device(self) -> _device_cls:
        v = self._value
        if _is_tracer(v):
            return _runtime.get_default_device()
        return _from_jax_device(next(iter(v.devices())))

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    is_cpu = property(lambda self: self.device.type == "cpu")
    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded op (users' tensors, parameters)."""
        if self._viewinfo is not None:
            self._fresh()
        return self._grad_fn is None

    output_nr = property(lambda self: self._output_nr,
                         doc="This tensor's index among its ``grad_fn``'s outputs (0 for a leaf).")
    is_sparse = False
    is_quantized = False

    @property
    def is_meta(self) -> bool:
        """Whether this is a meta tensor: a shape and a dtype, no data (funcgrad/_meta.py)."""
        return type(self._value) is _MetaArray

    layout = _strides.strided

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def _layout(self):
        """(sizes, strides, storage offset) as PyTorch would have them (``_strides.py``)."""
        vi = self._viewinfo
        if vi is None:
            shape = self._value.shape
            return shape, _strides.contiguous_strides(shape), 0
        if vi.layout is None:
            vi.layout = _strides.of_chain(self._cell.value.shape, vi.chain)
        return vi.layout

    def stride(self, dim: int | None = None):
        """Elements to step in storage per index of each dim (PyTorch's strides of this view).

        >>> import funcgrad
        >>> x = funcgrad.zeros(2, 3)
        >>> x.stride(), x.t().stride(), x[:, ::2].stride(1)
        ((3, 1), (1, 3), 2)
        """
        st = self._layout()[1]
        return st if dim is None else st[_wrap_dim(dim, len(st))]

    def storage_offset(self) -> int:
        """Where this view starts in its base's storage, in elements."""
        return self._layout()[2]

    def data_ptr(self) -> int:
        """The address of this tensor's first element: its storage's (shared by its views, by
        ``detach()`` and ``.data``, kept across in-place writes) plus its offset, as PyTorch's.
        funcgrad's storages have addresses of their own (``_storage.address``): compare them
        with each other, never with a NumPy or JAX buffer's.

        >>> import funcgrad
        >>> x = funcgrad.zeros(2, 3)
        >>> x[1].data_ptr() - x.data_ptr(), x.detach().data_ptr() == x.data_ptr()
        (12, True)
        """
        return _storage_address(self._cell) + self._layout()[2] * self.dtype.itemsize

    def untyped_storage(self):
        """The bytes under this tensor and its views (``funcgrad.storage.UntypedStorage``), read
        live: ``data_ptr()``, ``nbytes()``, ``tolist()``…"""
        return _above.storage_of(self, False)

    def storage(self):
        """PyTorch's deprecated ``TypedStorage`` of this tensor's storage (UserWarning once)."""
        return _above.storage_of(self, True)

    def is_set_to(self, tensor) -> bool:
        """Whether both tensors are the same view of the same storage (offset, sizes, strides)."""
        return self._cell is tensor._cell and self._layout() == tensor._layout()

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie in storage in row-major order without gaps (PyTorch's rule).

        >>> import funcgrad
        >>> x = funcgrad.zeros(2, 3)
        >>> x.is_contiguous(), x.t().is_contiguous(), x.t().contiguous().is_contiguous()
        (True, False, True)

        ``memory_format=funcgrad.channels_last`` (``channels_last_3d``) asks PyTorch's question for
        that layout (a row-major tensor is channels-last contiguous only where C or H*W is 1).
        """
        if memory_format is not None:
            _strides.check_memory_format(memory_format, "is_contiguous")
            sz, st, _ = self._layout()
            return _strides.is_contiguous_as(sz, st, memory_format)
        if self._viewinfo is None:
            return True
        sz, st, _ = self._layout()
        return _strides.is_contiguous(sz, st)

    @property
    def _base(self) -> Tensor | None:
        """The tensor this view was made from, as PyTorch's: a view of a view has the original's
        base; None for a tensor that is not a view (``detach()`` of a view included).

        >>> import funcgrad
        >>> x = funcgrad.arange(6.0)
        >>> v = x.view(2, 3).t()
        >>> v._base is x, x._base, v.detach()._base
        (True, None, None)
        """
        vi = self._viewinfo
        if vi is None:
            return None
        owner = vi.owner
        return vi.base if owner is None else (None if owner is False else owner)

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (``_base`` is set)."""
        return self._base is not None

    def is_inference(self) -> bool:
        """True for tensors made under ``inference_mode`` (they have no version counter)."""
        return self._ver is None

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's storage has seen (PyTorch's version counter)."""
        if self._ver is None:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._ver[0]

    def get_device(self) -> int:
        d = self.device
        return -1 if d.type == "cpu" or d.type == "meta" else (d.index or 0)

    def _type_name(self) -> str:  # the spelling in funcgrad's own messages
        return "funcgrad." + _above.legacy.type_string(self).rsplit(".", 1)[1]

    def type(self, dtype=None):
        """``x.type()`` is ``'torch.FloatTensor'``-style; ``x.type(funcgrad.LongTensor)`` converts."""
        return _above.legacy.type_string(self) if dtype is None else _above.legacy.to_type(self, dtype)

    is_xpu = is_mps = False

    # ---- autograd metadata --------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        # a view's, as PyTorch's DifferentiableViewMeta: also where its base requires grad (a
        # view made under no_grad; a base that came to require grad by a write through it)
        vi = self._viewinfo
        if self._requires_grad or vi is None or vi.owner is False:
            return self._requires_grad
        return (vi.base if vi.owner is None else vi.owner).requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        flag = bool(flag)
        if self._grad_fn is not None:
            raise RuntimeError(LEAF_FLAG_MSG + ("" if flag else LEAF_FLAG_HINT))
        if flag and self._ver is None and not _state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode "
                               "is not allowed.")
        if flag and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = flag

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and self._grad_fn is None and not (self.dtype.is_floating_point
                                                            or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")  # PyTorch's
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        if self._viewinfo is not None:
            self._fresh()
        return self._grad_fn

    @property
    def grad(self):
        if self._viewinfo is not None:
            self._fresh()
        if self._grad_fn is not None and not self._retains_grad:
            warnings.warn(NON_LEAF_GRAD_MSG, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, g) -> None:
        if g is not None:
            if not isinstance(g, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(g).__name__}")
            if g.dtype is not self.dtype:  # PyTorch 2.13's wording
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_dtype_cname(g.dtype)}' to a tensor "
                    f"with grad_dtype '{_scalar_type_name(self.dtype)}'. The gradient must match the "
                    f"tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                    f"grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
                    f"grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may "
                    f"break downstream systems that assume they match.")
            if g.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(g.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the "
                    f"same size")
        self._grad = g

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep this non-leaf's gradient in ``.grad`` after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._viewinfo is not None:
            self._fresh()
        if self._grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        node = self._grad_fn
        if node._retain is None:
            node._retain = {}
        node._retain[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook) -> RemovableHandle:
        """``hook(grad)`` runs when this tensor's gradient is computed; may return a new grad.

        >>> import funcgrad
        >>> x = funcgrad.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 2)
        >>> x.sum().backward(); x.grad
        tensor([2., 2.])
        """
        if self._viewinfo is not None:
            self._fresh()
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """``hook(tensor)`` runs after the gradient was accumulated into this leaf's ``.grad``."""
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return RemovableHandle(self._post_hooks, hook)

    def _set_grad_fn(self, node, nr: int) -> None:
        self._grad_fn, self._requires_grad = node, True
        if nr != self._output_nr:
            self._output_nr = nr
        vi = self._viewinfo
        if vi is not None and self._ver is not None:  # (PyTorch's set_gradient_edge)
            vi.ver = self._ver[0]

    def _fresh(self) -> None:
        """PyTorch's ``VariableHooks::grad_fn`` for a view: where the storage's version moved on
        since its node was set (a write through its base or another view of it), the node is
        stale (it reads the base's old node) and is made anew, an ``AsStridedBackward0`` from
        the base's current node (funcgrad/autograd/view_rebase.py; a view made under ``no_grad`` or by
        a multi-output op raises there, as PyTorch's). Whatever reads a view's node for
        autograd calls this first: ``grad_fn``, ``is_leaf``, ``_edge``, dispatch's recording."""
        vi, ver = self._viewinfo, self._ver
        if ver is not None and vi.ver != ver[0] and vi.owner is not False:
            _above.rebase_view(self)

    def _edge(self):
        if self._viewinfo is not None:
            self._fresh()
        if self._grad_fn is not None:
            return (self._grad_fn, self._output_nr)
        node = self._accum
        if node is None:  # one per leaf, kept by the leaf (the node holds the leaf weakly)
            node = self._accum = AccumulateGrad(self)
        return (node, 0)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute the gradient of this tensor w.r.t. graph leaves, accumulated into ``.grad``.

        >>> import funcgrad
        >>> x = funcgrad.ones(2, 2, requires_grad=True)
        >>> (3 * (x + 2) ** 2).mean().backward()
        >>> x.grad
        tensor([[4.5000, 4.5000],
                [4.5000, 4.5000]])
        """
        _above.backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self) -> "Tensor":
        """A new leaf sharing storage and version counter with this tensor."""
        return self._share(self._ver)

    def detach_(self) -> "Tensor":
        self._grad_fn, self._requires_grad, self._output_nr = None, False, 0
        return self

    @property
    def data(self) -> "Tensor":
        return self._share([0])

    @data.setter
    def data(self, other: "Tensor") -> None:
        self._cell, self._viewinfo = _new_cell(other._value), None

    # ---- conversion -----------------------------------------------------------------------
    def _concrete(self, what: str):
        v = self._value
        if type(v) is not _Array:
            if type(v) is _MetaArray:  # (PyTorch's error for reading a meta tensor's data)
                _meta_refuse_read(v, what)
            elif _is_tracer(v):
                raise TracedValueError(what)
        return v

    def item(self):
        """The value of a one-element tensor as a Python number."""
        v = self._concrete("item()")
        if v.size != 1:
            raise RuntimeError(f"a Tensor with {v.size} elements cannot be converted to Scalar")
        return np.asarray(v).reshape(()).item()

    def tolist(self):
        return np.asarray(self._concrete("tolist()")).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._requires_grad and not force and type(self._value) is not _MetaArray:  # (meta: _concrete's)
            raise RuntimeError(NUMPY_GRAD_MSG)
        return _above.numpy_of(self)  # shares memory on CPU, as PyTorch's (funcgrad/_numpy_share.py)

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:  # (PyTorch's is self.numpy(): np.asarray(t), np.exp(t), t + array refuse)
            raise RuntimeError(NUMPY_GRAD_MSG)
        a = np.asarray(self._concrete("__array__"))
        return a.astype(dtype) if dtype is not None else a

    # NumPy on a Tensor as on PyTorch's (torch/_tensor.py): NumPy's own operators defer to a Tensor's
    # (``array + t`` is ``t.__radd__``'s), and a ufunc's result comes back a Tensor (a bool one as
    # uint8, a scalar as a 0-d Tensor)
    __array_priority__ = 1000

    def __array_wrap__(self, array, context=None, return_scalar=False):
        return _above.from_numpy(array.astype(np.uint8) if array.dtype == np.bool_ else array)

    def __jax_array__(self):
        return self._value

    def jax(self) -> jax.Array:
        """The underlying ``jax.Array`` (no copy; not tracked by autograd)."""
        return self._value

    def __bool__(self) -> bool:
        v = self._concrete("bool()")
        if v.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(np.asarray(v).reshape(()))

    def __float__(self) -> float:
        if self._requires_grad and _state.enabled:
            _warn_scalar_once()
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        if self._requires_grad and _state.enabled:
            _warn_scalar_once()
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype._kind not in "bi" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._value.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __format__(self, spec: str) -> str:
        if type(self._value) is _MetaArray:  # (PyTorch's: object.__format__, no item())
            return object.__format__(self, spec)
        if self._value.ndim == 0 and not _is_tracer(self._value):
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __reduce_ex__(self, proto):
        return (_rebuild, (np.asarray(self.detach()._value), self._requires_grad))

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.  If you were attempting to "
                               "deepcopy a module, this may be because of a torch.nn.utils."
                               "weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
        new = type(self).__new__(type(self))
        Tensor._init(new, self._value)
        new._requires_grad = self._requires_grad
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        # the autograd bookkeeping that lives in __dict__ belongs to the original: a copy
        # sharing its AccumulateGrad node would send its gradients to the original leaf
        extra = {k: v for k, v in getattr(self, "__dict__", {}).items()
                 if k not in ("_accum", "_grad", "_output_nr", "_retains_grad")}
        if extra:
            import copy
            new.__dict__.update(copy.deepcopy(extra, memo))
        memo[id(self)] = new
        return new

    # ---- device / dtype moves -------------------------------------------------------------
    def to(self, *args, **kwargs) -> "Tensor":
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``; ``copy=``, ``non_blocking=``,
        ``memory_format=`` (checked; the result is row-major, see ``contiguous``)."""
        given = dict(kwargs)
        dtype, dev = kwargs.pop("dtype", None), kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)
        if fmt is not None and not isinstance(fmt, _strides.memory_format):
            raise _strides.to_arguments_error(args, given)
        _strides.check_memory_format(fmt, "to", self.ndim)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, (_dtype.dtype, type)) or (isinstance(a, str) and a in _dtype._NAMES):
                dtype = _dtype.to_dtype(a)
            elif isinstance(a, (str, _device_cls, int)):
                dev = _device_cls("cuda", a) if isinstance(a, int) else a
            elif isinstance(a, bool):
                pass
            else:
                dtype = _dtype.to_dtype(a)
        out = self
        if dev is not None:
            jd = jax_device(dev)
            v = self._value
            if not _is_tracer(v) and jd not in v.devices():
                out = _above.to_device(out, jd)
        if dtype is not None and _dtype.to_dtype(dtype) is not self.dtype:
            out = _above.apply(_above._to_copy, out, dtype=_dtype.to_dtype(dtype).np)
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False) -> "Tensor":
        return self.to(_device_cls("cuda", device if isinstance(device, int) else None)
                       if not isinstance(device, (str, _device_cls)) else device)

    def double(self): return self.to(_dtype.float64)
    def float(self): return self.to(_dtype.float32)
    def half(self): return self.to(_dtype.float16)
    def bfloat16(self): return self.to(_dtype.bfloat16)
    def long(self): return self.to(_dtype.int64)
    def int(self): return self.to(_dtype.int32)
    def short(self): return self.to(_dtype.int16)
    def char(self): return self.to(_dtype.int8)
    def byte(self): return self.to(_dtype.uint8)
    def bool(self): return self.to(_dtype.bool_)
    def cfloat(self): return self.to(_dtype.complex64)
    def cdouble(self): return self.to(_dtype.complex128)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def contiguous(self, memory_format=None) -> "Tensor":
        """``self`` if contiguous, else a contiguous copy (``CloneBackward0``), as PyTorch.

        ``memory_format`` is checked as PyTorch checks it (a ``funcgrad.memory_format``; rank 4
        for ``channels_last``, 5 for ``channels_last_3d``), but the copy is row-major: funcgrad
        lays out every non-view result so (README "What differs")."""
        _strides.check_memory_format(memory_format, "contiguous", self.ndim)
        if self.is_contiguous():
            return self
        return self.clone()

    def pin_memory(self) -> "Tensor":
        if type(self._value) is _MetaArray:
            raise RuntimeError(f"cannot pin 'Meta{_scalar_type_name(self.dtype)}Type' only dense CPU "
                               f"tensors can be pinned")
        return self

    def share_memory_(self) -> "Tensor":
        return self

    # ---- printing -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        suffix = []
        name = None
        if self._viewinfo is not None:
            try:
                self._fresh()
            except RuntimeError:  # (PyTorch's repr, where reading the view's grad_fn raises)
                name = "Invalid"
        if name is None and self._grad_fn is not None:
            name = type(self._grad_fn).__name__  # (PyTorch's repr: the class name, not name())
        if name is not None:
            suffix.append(f"grad_fn=<{name}>")
        elif self.requires_grad:
            suffix.append("requires_grad=True")
        if DUAL[0] is not None and (tangent := DUAL[0].tangent(self)) is not None:
            suffix.append(f"tangent={tangent}")
        v = self._value
        prefix = "Parameter containing:\n" if getattr(type(self), "_is_parameter", False) else ""
        if _is_tracer(v):
            s = ", ".join([f"<traced {v.dtype}{list(v.shape)}>"] + suffix)
            return f"{prefix}tensor({s})"
        dt = self.dtype
        if type(v) is _MetaArray:
            return prefix + format_meta(v.shape, dtype_name=dt.name, suffixes=suffix,
                                        is_default_dtype=dt is _dtype.get_default_dtype())
        dev = self.device
        return prefix + format_tensor(
            np.asarray(v.astype(jnp.float32) if dt is _dtype.bfloat16 else v),
            dtype_name=dt.name, is_default_dtype=dt is _dtype.get_default_dtype() or
            dt is _dtype.get_default_dtype().to_complex(),  # complex64 prints bare, as in PyTorch
            suffixes=suffix, device_suffix=None if dev.type == "cpu" else f"device='{dev}'")

    __str__ = __repr__

    # ---- in-place machinery ----------------------------------------------------------------
    def _check_inplace(self) -> None:
        if self._ver is None and not _state.inference:
            raise RuntimeError(INFERENCE_INPLACE_MSG)
        vi = self._viewinfo
        if vi is not None and vi.meta is not None and _state.enabled and vi.owner is not False \
                and self.requires_grad:  # (PyTorch's check_inplace: handle_view_on_rebase)
            _above.refuse_rebase(self, False)
        if _state.enabled and self._requires_grad:
            base = self._base
            if self._grad_fn is None and base is None:
                raise RuntimeError(LEAF_INPLACE_MSG)
            if base is not None and base._grad_fn is None and base._requires_grad:
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation.")

    def _inplace(self, fn, *args, _c_type_cast: bool = False, **kwargs) -> "Tensor":
        """Run out-of-place ``fn(self_snapshot, *args)`` and commit its result into ``self``
        (``_c_type_cast``: see ``_commit``)."""
        self._check_inplace()
        out = fn(self._snapshot(), *args, **kwargs)
        return self._commit(out, c_type_cast=_c_type_cast)

    def _rebase_chain(self):
        """``(base, steps from base's value to self's)`` for a write into this view, or
        ``(None, ())`` where self is no view (or no longer shares its base's storage)."""
        vi = self._viewinfo
        base = None if vi is None else self._base
        if base is None or base._cell is not self._cell:  # (a resize_ gave it a storage)
            return None, ()
        chain, bvi = vi.chain, base._viewinfo  # (chains read the storage: see _View)
        if bvi is not None:  # a base that is no view of PyTorch's reads a chain too
            n = len(bvi.chain)
            if vi.owner is not None and vi.chain[:n] == bvi.chain:
                chain = chain[n:]
            else:  # (the base's shape changed in place since this view was made)
                chain = _above.inverse_chain(bvi.chain, self._cell.value.shape) + chain
        return base, chain

    def _commit(self, out: "Tensor", c_type_cast: bool = False) -> "Tensor":
        """Write ``out`` into ``self``. A result self's dtype cannot hold raises PyTorch's cast
        error, naming self's ScalarType (``Long``), or with ``c_type_cast`` its C++ type (``long
        int``), as PyTorch's structured kernels with a Scalar overload do (``clamp_(min=0.5)``)."""
        if out.dtype is not self.dtype:
            if self.dtype._kind in "bi" and out.dtype._kind in "fc" or \
                    self.dtype._kind == "b" and out.dtype._kind == "i":
                want = (_dtype_cname if c_type_cast else _scalar_type_name)(self.dtype)
                raise RuntimeError(f"result type {_scalar_type_name(out.dtype)} can't be cast to "
                                   f"the desired output type {want}")
            out = out.to(self.dtype)
        if out.shape != self.shape:
            _broadcast.check_inplace(self.shape, (out.shape,))
            out = _above.expand(out, self.shape)
        rebase = out._requires_grad and _state.enabled
        if rebase:  # (before the write: a view whose steps cannot be replayed refuses)
            vi = self._viewinfo
            if vi is not None and vi.meta is not None and vi.owner is not False:
                _above.refuse_rebase(self, False)  # (a view made by no_grad/unbind, as PyTorch)
            base, chain = self._rebase_chain()
        if DUAL[0] is not None:  # self's tangent becomes out's (before the write: it may refuse)
            DUAL[0].commit(self, out)
        self._set_value(out._value)
        if self._ver is not None:  # inference tensors have no version counter
            self._ver[0] += 1
        if rebase:
            if base is not None:  # rebased: CopySlices on its base, then (PyTorch's rebase_history)
                # the view's node made anew from there: AsStridedBackward0 (see _fresh)
                new_base = _above.apply(_above.COPY_SLICES, base._snapshot(), out, chain=chain)
                base._grad_fn, base._output_nr, base._requires_grad = new_base._grad_fn, 0, True
                _above.rebase_view(self, base, chain)
            else:
                self._set_grad_fn(out._grad_fn, out._output_nr)
        return self


def _dtype_cname(d) -> str:
    """The C type name PyTorch prints for a dtype (``double``, ``float``, ``long int``…)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}.get(d.name, d.name)


def _scalar_type_name(d) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


def _wrap_dim(dim: int, ndim: int) -> int:
    if type(dim) is not int:  # a NumPy or 0-d integer tensor dim as PyTorch's parser takes it; a float or a
        if isinstance(dim, bool):  # bool refused before any kernel sees it (its key would equal an int's)
            raise TypeError("'bool' object cannot be interpreted as a dim")
        dim = operator.index(dim)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _rebuild(arr, requires_grad):
    t = Tensor._wrap(jnp.asarray(arr))
    t._requires_grad = requires_grad
    return t


# ---- JAX pytree: a Tensor is a node holding one leaf (its array), so jax.jit / jax.grad /
# jax.vmap / jax.tree utilities accept Tensors and give Tensors back (requires_grad kept as aux).
def _tree_flatten(t):
    # only a leaf carries requires_grad through a JAX transformation: a result (``w * 2``
    # returned from ``jax.jit(f)(w)``) has no graph back to ``w`` once out, so it must not
    # claim one (its backward would leave ``w.grad`` None); it comes back detached
    return (t._value,), t._requires_grad and t._grad_fn is None


def _tree_unflatten(cls, requires_grad, children):
    t = object.__new__(cls)
    Tensor._init(t, children[0])
    t._requires_grad = requires_grad
    return t


def _register_pytree(cls) -> None:
    import functools
    jax.tree_util.register_pytree_node(cls, _tree_flatten, functools.partial(_tree_unflatten, cls))


_register_pytree(Tensor)

# doctest collects a module's classes by __module__ (now funcgrad's): list these here
__test__ = {"Size": Size, "Tensor": Tensor}
