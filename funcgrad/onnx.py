"""``funcgrad.onnx``: importable so scripts that mention it load; exporting goes through
``funcgrad.export`` (a serialised XLA program), not ONNX."""

from __future__ import annotations

EXPORT_MSG = ("funcgrad.onnx.export is not supported: funcgrad programs are XLA, not ONNX. Use "
              "funcgrad.export(model, example_inputs) to save a compiled, reloadable program.")


def export(*args, **kwargs):
    """Raises ``NotImplementedError`` (a ``RuntimeError``): use ``funcgrad.export``.

    >>> import funcgrad
    >>> funcgrad.onnx.export(None, ())
    Traceback (most recent call last):
    ...
    NotImplementedError: funcgrad.onnx.export is not supported: funcgrad programs are XLA, not ONNX. Use funcgrad.export(model, example_inputs) to save a compiled, reloadable program.
    """
    raise NotImplementedError(EXPORT_MSG)


def is_in_onnx_export() -> bool:
    return False


__all__ = ["export", "is_in_onnx_export"]
