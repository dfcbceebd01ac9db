"""Unpicklers for PyTorch checkpoints: a restricted one (``weights_only=True``) and a full one.

The restricted unpickler is an opcode interpreter of its own, as PyTorch's
``torch/_weights_only_unpickler.py`` is, rather than a ``pickle.Unpickler`` subclass: the C
unpickler sizes its memo by the largest index a file names (``LONG_BINPUT 4294967295`` allocates
32 GiB) and calls a class's ``__setstate__``/``__new__`` itself, so the only safe way to bound
what a hostile file costs is to execute every opcode here. It runs only the opcodes PyTorch's
runs, only calls the allowlisted globals (``_torch_names.ALLOWED`` plus the user's
``safe_globals``), checks every declared length against the bytes present, and counts the objects
it creates. Its refusals are ``pickle.UnpicklingError`` with PyTorch's wording.

The full unpickler (``weights_only=False``) is ``pickle.Unpickler``: it can run any code, as
PyTorch's can, and maps only the PyTorch names above to funcgrad's.
"""

from __future__ import annotations

import _compat_pickle  # the Python 2 -> 3 names pickle itself (and PyTorch) apply
import collections
import pickle
import pickletools
import struct
import threading
from typing import Any, Callable

from . import _torch_names
from ._limits import MAX_KEY_NODES, MAX_OBJECTS, Corrupt, brief

UnpicklingError = pickle.UnpicklingError

# modules never allowed, even if the user allowlists something from them (as PyTorch)
BLOCKED_MODULES = ("sys", "os", "posix", "nt")

_lock = threading.Lock()
_user_globals: set = set()


def add_safe_globals(safe_globals: list) -> None:
    """Mark globals as safe for ``weights_only`` loading (see ``funcgrad.serialization``)."""
    global _user_globals
    with _lock:
        _user_globals = _user_globals | set(safe_globals)


def get_safe_globals() -> list:
    """The globals added with :func:`add_safe_globals` / :class:`safe_globals`."""
    return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    global _user_globals
    with _lock:
        _user_globals = set()


def remove_safe_globals(globals_to_remove: list) -> None:
    global _user_globals
    with _lock:
        _user_globals = _user_globals - set(globals_to_remove)


def _user_allowed() -> dict[str, Any]:
    rc: dict[str, Any] = {}
    for f in _user_globals:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full path), "
                                 f"but got tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full path, "
                                f"but got: {type(f[1])}")
            rc[f[1]] = f[0]
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


# protocol-2 opcodes, by byte
_OP = {op.name: op.code.encode("latin1")[0] for op in pickletools.opcodes}


def _unsupported_global(full_path: str) -> UnpicklingError:
    if full_path.startswith("builtins"):  # PyTorch prints builtins.eval as eval
        rest = full_path[len("builtins"):]
        full_path = rest[1:] if rest.startswith(".") else "builtins" + rest
    return UnpicklingError(
        f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. "
        f"Please use `funcgrad.serialization.add_safe_globals([{full_path}])` or the "
        f"`funcgrad.serialization.safe_globals([{full_path}])` context manager to allowlist this "
        "global if you trust this class/function.")


def _key_ok(k, budget: list) -> bool:
    """Whether ``k`` may be hashed cheaply: plain values, objects hashed by identity (dtypes,
    allowlisted classes) and tuples of these with at most ``MAX_KEY_NODES`` parts in all."""
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if isinstance(k, tuple):  # tuple, Size: hashing visits every part, repeats included
        return all(_key_ok(v, budget) for v in k)
    t = type(k)
    return t in (str, int, float, bool, bytes, complex, type(None)) or t.__hash__ is object.__hash__


def _check_key(k) -> None:
    if not _key_ok(k, [MAX_KEY_NODES]):
        raise UnpicklingError(f"a dict key or set element of type {type(k).__name__} that is not a "
                              f"plain value or is a tuple of more than {MAX_KEY_NODES} values")


class _Inert:
    """What a non-allowlisted global is in a dry run: calling, building or filling it does nothing."""

    def __repr__(self) -> str:
        return "<inert>"


_INERT = _Inert()


class WeightsUnpickler:
    """``torch._weights_only_unpickler.Unpickler`` over funcgrad's allowlist, with size limits.

    Args:
        data: the whole pickle (bytes), so every declared length is checked against it.
        persistent_load: ``fn(pid)`` for a storage's persistent id.
        encoding: how protocol-2 ``SHORT_BINSTRING`` (Python 2 ``str``) is decoded; ``'bytes'``
            keeps bytes.
    """

    def __init__(self, data: bytes, persistent_load: Callable, encoding: str = "utf-8",
                 dry: bool = False):
        self.data, self.pos = memoryview(data), 0
        self.dry = dry  # globals outside the allowlist become inert placeholders (never called)
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.memo: dict[int, Any] = {}
        self.objects = 0

    def _read(self, n: int) -> memoryview:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise Corrupt(f"the pickle is truncated (an opcode at byte {self.pos} needs {n} more "
                          f"bytes, {len(self.data) - self.pos} are left)")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def _readline(self) -> str:
        data = self.data
        end = bytes(data[self.pos:self.pos + 4096]).find(b"\n")
        if end < 0:
            raise Corrupt(f"the pickle is truncated or malformed (no end of line at byte {self.pos})")
        line = bytes(data[self.pos:self.pos + end])
        self.pos += end + 1
        return line.decode("utf-8")

    def _new(self, obj):
        self.objects += 1
        if self.objects > MAX_OBJECTS:
            raise Corrupt(f"the pickle creates more than {MAX_OBJECTS} objects")
        return obj

    def _global(self, module: str, name: str):
        full = f"{module}.{name}"
        if module in BLOCKED_MODULES:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module {module} "
                                  "is blocked.")
        if full in _torch_names.ALLOWED:
            return _torch_names.ALLOWED[full]
        if full in _torch_names.LAZY:
            return _torch_names.LAZY[full]()
        user = _user_allowed()
        if full in user:
            return user[full]
        if self.dry:
            return _INERT
        raise _unsupported_global(full)

    def _allowed(self, f) -> bool:
        return any(f is v for v in _torch_names.ALLOWED.values()) or \
            any(f is v for v in _user_allowed().values())

    def load(self):
        """Interpret the pickle; returns the object it builds."""
        try:
            return self._load()
        except (Corrupt, UnpicklingError):
            raise
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError,
                struct.error, UnicodeDecodeError, RecursionError, ZeroDivisionError) as e:
            raise Corrupt(f"malformed pickle ({type(e).__name__}: {e})") from None

    def _load(self):
        op = _OP
        metastack: list = []
        stack: list = []
        read = self._read
        while True:
            key = read(1)[0]
            if key == op["GLOBAL"]:
                module, name = self._readline(), self._readline()
                if (module, name) in _compat_pickle.NAME_MAPPING:  # protocol 2 writes __builtin__
                    module, name = _compat_pickle.NAME_MAPPING[(module, name)]
                elif module in _compat_pickle.IMPORT_MAPPING:
                    module = _compat_pickle.IMPORT_MAPPING[module]
                stack.append(self._global(module, name))
            elif key == op["NEWOBJ"]:
                args = stack.pop()
                cls = stack.pop()
                if cls is _INERT:
                    stack.append(_INERT)
                elif cls is _torch_names.LAZY["torch.nn.parameter.Parameter"]():
                    stack.append(self._new(cls(*args)))
                elif isinstance(cls, type) and any(cls is v for v in _user_allowed().values()):
                    stack.append(self._new(cls.__new__(cls, *args)))
                else:
                    raise UnpicklingError("Can only create new object for nn.Parameter or classes "
                                          f"allowlisted via `add_safe_globals` but got {brief(cls)}")
            elif key == op["REDUCE"]:
                args = stack.pop()
                func = stack[-1]
                if func is _INERT:
                    continue
                if not self._allowed(func) or isinstance(func, (_torch_names.StorageType,
                                                                _torch_names.UnsupportedDtype)):
                    raise UnpicklingError(f"Trying to call reduce for unrecognized function {brief(func)}")
                if type(args) is not tuple:
                    raise Corrupt("REDUCE arguments are not a tuple")
                if func in (set, collections.OrderedDict, collections.Counter):
                    self._check_keys(func, args)
                if self.dry:  # placeholders may reach an allowlisted function: keep going
                    try:
                        stack[-1] = self._new(func(*args))
                    except Corrupt:
                        raise
                    except Exception:
                        stack[-1] = _INERT
                else:
                    stack[-1] = self._new(func(*args))
            elif key == op["BUILD"]:
                state = stack.pop()
                inst = stack[-1]
                if inst is _INERT:
                    pass
                elif type(inst) is collections.OrderedDict:
                    if type(state) is not dict or not all(type(k) is str for k in state):
                        raise Corrupt("BUILD state of an OrderedDict is not a dict of attributes")
                    inst.__dict__.update(state)
                elif getattr(type(inst), "_is_parameter", False):
                    if state:
                        raise UnpicklingError("a Parameter with extra Python state cannot be loaded")
                elif any(type(inst) is v for v in _user_allowed().values()):
                    if hasattr(inst, "__setstate__"):
                        inst.__setstate__(state)
                    else:
                        slotstate = None
                        if isinstance(state, tuple) and len(state) == 2:
                            state, slotstate = state
                        if state:
                            inst.__dict__.update(state)
                        if slotstate:
                            for k, v in slotstate.items():
                                setattr(inst, k, v)
                else:
                    raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types "
                                          f"allowlisted via `add_safe_globals`, but got {type(inst)}")
            elif key == op["APPEND"]:
                item = stack.pop()
                if stack[-1] is _INERT:
                    continue
                if type(stack[-1]) is not list:
                    raise UnpicklingError(f"Can only append to lists, but got {type(stack[-1])}")
                stack[-1].append(item)
            elif key == op["APPENDS"]:
                items, stack = stack, metastack.pop()
                if stack[-1] is _INERT:
                    continue
                if type(stack[-1]) is not list:
                    raise UnpicklingError(f"Can only extend lists, but got {type(stack[-1])}")
                stack[-1].extend(items)
            elif key == op["SETITEM"]:
                v, k = stack.pop(), stack.pop()
                if stack[-1] is _INERT:
                    continue
                self._check_dict(stack[-1], "SETITEM")
                _check_key(k)
                stack[-1][k] = v
            elif key == op["SETITEMS"]:
                items, stack = stack, metastack.pop()
                if stack[-1] is _INERT:
                    continue
                self._check_dict(stack[-1], "SETITEMS")
                if len(items) % 2:
                    raise Corrupt("SETITEMS with an odd number of items")
                d = stack[-1]
                for i in range(0, len(items), 2):
                    _check_key(items[i])
                    d[items[i]] = items[i + 1]
            elif key == op["MARK"]:
                metastack.append(stack)
                stack = self._new([])
            elif key == op["TUPLE"]:
                items, stack = stack, metastack.pop()
                stack.append(self._new(tuple(items)))
            elif key == op["TUPLE1"]:
                stack[-1] = self._new((stack[-1],))
            elif key == op["TUPLE2"]:
                stack[-2:] = [self._new((stack[-2], stack[-1]))]
            elif key == op["TUPLE3"]:
                stack[-3:] = [self._new((stack[-3], stack[-2], stack[-1]))]
            elif key == op["NONE"]:
                stack.append(None)
            elif key == op["NEWFALSE"]:
                stack.append(False)
            elif key == op["NEWTRUE"]:
                stack.append(True)
            elif key == op["EMPTY_TUPLE"]:
                stack.append(())
            elif key == op["EMPTY_LIST"]:
                stack.append(self._new([]))
            elif key == op["EMPTY_DICT"]:
                stack.append(self._new({}))
            elif key == op["EMPTY_SET"]:
                stack.append(self._new(set()))
            elif key == op["BININT"]:
                stack.append(struct.unpack("<i", read(4))[0])
            elif key == op["BININT1"]:
                stack.append(read(1)[0])
            elif key == op["BININT2"]:
                stack.append(struct.unpack("<H", read(2))[0])
            elif key == op["BINFLOAT"]:
                stack.append(struct.unpack(">d", read(8))[0])
            elif key == op["BINUNICODE"]:
                n = struct.unpack("<I", read(4))[0]
                stack.append(self._new(str(read(n), "utf-8", "surrogatepass")))
            elif key == op["SHORT_BINSTRING"]:
                raw = bytes(read(read(1)[0]))
                stack.append(self._new(raw if self.encoding == "bytes"
                                       else raw.decode(self.encoding, "strict")))
            elif key == op["BINPERSID"]:
                pid = stack.pop()
                if type(pid) is not tuple and type(pid) is not int:
                    raise UnpicklingError(
                        f"persistent_load id must be tuple or int, but got {type(pid)}")
                if type(pid) is tuple and len(pid) > 0 and pid[0] not in ("storage", b"storage"):
                    raise UnpicklingError(
                        f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
                stack.append(self._new(self.persistent_load(pid)))
            elif key == op["BINGET"]:
                stack.append(self.memo[read(1)[0]])
            elif key == op["LONG_BINGET"]:
                stack.append(self.memo[struct.unpack("<I", read(4))[0]])
            elif key == op["BINPUT"]:
                self.memo[read(1)[0]] = stack[-1]
            elif key == op["LONG_BINPUT"]:
                self.memo[struct.unpack("<I", read(4))[0]] = stack[-1]
            elif key == op["LONG1"]:
                stack.append(int.from_bytes(read(read(1)[0]), "little", signed=True))
            elif key == op["PROTO"]:
                read(1)
            elif key == op["STOP"]:
                return stack.pop()
            else:
                raise UnpicklingError(f"Unsupported operand {key}")

    @staticmethod
    def _check_keys(func, args) -> None:
        # building a set/dict hashes its keys: check them first (see _check_key)
        for a in args:
            if type(a) not in (list, tuple):
                continue
            for e in a:
                pair = func is not set and type(e) is tuple and len(e) == 2
                _check_key(e[0] if pair else e)

    @staticmethod
    def _check_dict(d, opcode: str) -> None:
        if type(d) not in (dict, collections.OrderedDict, collections.Counter):
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                  f"collections.Counter, but got {type(d)}")


class FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: ordinary unpickling (it can run code, as PyTorch's can), with
    PyTorch's tensor/storage/dtype names mapped to funcgrad's and storages from the archive."""

    def __init__(self, file, persistent_load: Callable, **kwargs):
        super().__init__(file, **kwargs)
        self._persistent = persistent_load

    def persistent_load(self, pid):
        return self._persistent(pid)

    def find_class(self, module: str, name: str):
        full = f"{module}.{name}"
        if full in _torch_names.ALLOWED:
            return _torch_names.ALLOWED[full]
        if full in _torch_names.LAZY:
            return _torch_names.LAZY[full]()
        if module == "torch" or module.startswith("torch."):
            raise pickle.UnpicklingError(
                f"funcgrad cannot load the PyTorch object {full} (the file pickles a whole PyTorch "
                "object, e.g. a Module or an optimizer). In PyTorch, save its state_dict() and load "
                "that into the funcgrad model instead.")
        return super().find_class(module, name)


_UNSAFE = ("In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
           "`torch.load` from `False` to `True`. Re-running `funcgrad.load` with `weights_only` set "
           "to `False` will likely succeed, but it can result in arbitrary code execution. Do it only "
           "if you got the file from a trusted source.")
_DOCS = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default "
         "with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def weights_only_message(message: str) -> str:
    """PyTorch's ``_get_wo_message``: wrap a restricted-unpickler refusal for the user."""
    if "was not an allowed global by default." in message:
        return ("Weights only load failed. This file can still be loaded, to do so you have two "
                "options, \033[1mdo those steps only if you trust the source of the checkpoint"
                f"\033[0m. \n\t(1) {_UNSAFE}\n\t(2) Alternatively, to load with `weights_only=True` "
                "please check the recommended steps in the following error message.\n\t"
                "WeightsUnpickler error: " + message + _DOCS)
    out = f"Weights only load failed. {_UNSAFE}\n"
    if "is blocked" not in message:
        out += ("Please file an issue with the following so that we can make `weights_only=True` "
                "compatible with your use case: WeightsUnpickler error: ")
    return out + "\n\n" + message + _DOCS
