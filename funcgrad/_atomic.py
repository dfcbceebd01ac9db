"""Atomic file writes: a reader sees the old file or the whole new one, never a torn write.

Shared by ``funcgrad.save`` / ``funcgrad.export`` (durable: fsync of the file and of the rename) and
the persistent compilation cache (not durable: an entry lost in a crash is only a recompile).
"""

from __future__ import annotations

import os
import tempfile


def atomic_write(path: str, write, durable: bool = True) -> None:
    """Call ``write(file)`` on a temporary file beside ``path`` and rename it over ``path``.

    A crash or an exception mid-write leaves the previous file (or no file) and no temporary.
    ``durable`` also fsyncs the data and the directory entry, so the rename survives a power cut.
    The new file gets the mode a plain ``open(path, "wb")`` would give it.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "f.bin")
    >>> atomic_write(p, lambda f: f.write(b"abc"))
    >>> with open(p, "rb") as f:
    ...     f.read()
    b'abc'
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        # mkstemp makes the file 0600; give it the mode a plain open() would have
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if not durable:
        return
    try:  # make the rename itself durable (POSIX; best effort elsewhere)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
