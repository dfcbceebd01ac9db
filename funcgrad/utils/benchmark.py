"""``funcgrad.utils.benchmark``: PyTorch's ``Timer`` / ``Measurement`` (``timeit``,
``blocked_autorange``, ``adaptive_autorange``) with the same statistics and printout.

JAX dispatches work asynchronously (on CPU as well), so the clock waits for all arrays the
statement produced before it reads the time, as PyTorch's timer synchronises CUDA.

>>> import funcgrad
>>> from funcgrad.utils.benchmark import Timer
>>> m = Timer("x + x", globals={"x": funcgrad.ones(4)}).timeit(10)
>>> m.number_per_run, len(m.times)
(10, 1)
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import textwrap
import timeit
from typing import Any, Callable

import jax
import numpy as np

from .. import _runtime

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def timer() -> float:
    """``time.perf_counter`` after the queued JAX work finished."""
    for a in jax.live_arrays():
        a.block_until_ready()
    return timeit.default_timer()


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a Timer measures (PyTorch's fields)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        return f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup else f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join([f"{i}\n" if "\n" in i else i for i in sections if i])


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def select_unit(t: float) -> tuple[str, float]:
    """The time unit PyTorch prints ``t`` seconds in (computed in float32, as PyTorch does)."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(np.log10(np.float32(t)) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


@dataclasses.dataclass(repr=False)
class Measurement:
    """Times of one statement: ``mean``, ``median``, ``iqr``, ``times``; prints as PyTorch's."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self) -> None:
        self._sorted_times: tuple = ()
        self._warnings: tuple = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    @property
    def significant_figures(self) -> int:
        self._lazy_init()
        n = len(self._sorted_times)
        pts = self._sorted_times[n // 4:int(np.ceil(np.float32(3 * n / 4)))]
        std = float(np.std(np.asarray(pts, np.float32)))
        ci = max(1.645 * std / float(np.sqrt(np.float32(len(pts)))), _MIN_CONFIDENCE_INTERVAL)
        return min(max(int(np.floor(np.log10(np.float32(self._median / ci)))), 1), _MAX_SIGNIFICANT_FIGURES)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            s = np.asarray(self._sorted_times, np.float64)
            self._median, self._mean = float(np.quantile(s, 0.5)), float(s.mean())
            self._p25, self._p75 = float(np.quantile(s, 0.25)), float(np.quantile(s, 0.75))

            def add_warning(msg: str) -> None:
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                                   f"of the median measurement.\n           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        skip = "MEASUREMENT_REPR_SKIP_LINE"
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        iqr_filter = "" if n >= 4 else skip
        threads = self.num_threads
        lines = [
            object.__repr__(self),
            self.task_spec.summarize(),
            f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}",
            f"  {iqr_filter}IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
            f"{self._p75 / scale:.2f})",
            f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
            f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}",
            "\n".join(self._warnings)]
        text = "\n".join(lines).strip()
        return "\n".join(ln for ln in text.splitlines() if skip not in ln)

    @staticmethod
    def merge(measurements) -> list:
        groups: dict = {}
        for m in measurements:
            groups.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]


@contextlib.contextmanager
def _threads(n: int):
    prior = _runtime.get_num_threads()
    try:
        _runtime.set_num_threads(n)
        yield
    finally:
        _runtime.set_num_threads(prior)


class Timer:
    """``Timer(stmt, setup, globals=...)``: ``timeit(number)``, ``blocked_autorange()``,
    ``adaptive_autorange()`` return a :class:`Measurement` (``funcgrad`` is preset as ``torch``)."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: str = "python"):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in ("py", "python"):
            raise ValueError(f"Invalid language `{language}`." if language not in ("cpp", "c++")
                             else "funcgrad.utils.benchmark times Python statements only")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code "
                             "can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        # the top package, complete by the time a Timer is built (PyTorch presets ``torch``)
        self._globals.setdefault("torch", sys.modules[__name__.split(".")[0]])
        stmt, setup = textwrap.dedent(stmt), textwrap.dedent(setup)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env,
                                   num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        with _threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))  # warm-up (also compiles the kernels)
            return Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                               task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _loop(self, number, stop_hook, min_run_time, max_run_time=None, callback=None) -> list:
        total, can_stop, times = 0.0, False, []
        with _threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop_hook(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        with _threads(self._task_spec.num_threads):
            overhead = float(np.median([self._timeit(0) for _ in range(5)]))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of ``number`` runs (sized so timer overhead is negligible) until ``min_run_time``."""
        number = self._estimate_block_size(min_run_time)
        times = self._loop(number, lambda times: True, min_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times) -> bool:
            return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(threshold)
        times = self._loop(number, stop, min_run_time, max_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)


__all__ = ["Timer", "Measurement", "TaskSpec", "select_unit", "timer"]
