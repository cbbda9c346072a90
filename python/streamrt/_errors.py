"""Exceptions raised by streamrt: one class per status code of the C++ library.

Every error the library reports is a :class:`Error` whose message is the library's (it says what
was wrong and where). Bad arguments are :class:`InvalidArgumentError`, which is also a
``ValueError``; I/O failures are also ``OSError`` and running out of memory also ``MemoryError``.
"""

from __future__ import annotations

__all__ = [
    "Error",
    "InvalidArgumentError",
    "InvalidModelError",
    "InvalidPlanError",
    "InvalidProgramError",
    "IncompatibleError",
    "UnsupportedError",
    "NotFoundError",
    "InvalidStateError",
    "OutOfMemoryError",
    "DeviceError",
    "IoError",
    "InternalError",
]


class Error(Exception):
    """Base class of streamrt's errors. ``code`` names the library's status code
    ("InvalidPlan", ...); ``message`` is the library's message."""

    code: str = "Unknown"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(Error, ValueError):
    """A bad argument: a malformed budget, a missing input, a wrong dtype or dims outside the profile."""

    code = "InvalidArgument"


class InvalidModelError(Error):
    """The ONNX model is malformed or cannot be built (an op, a shape, a dtype)."""

    code = "InvalidModel"


class InvalidPlanError(Error):
    """A plan file is corrupt or not a plan."""

    code = "InvalidPlan"


class InvalidProgramError(Error):
    """A program file (.pte) is corrupt or not a program."""

    code = "InvalidProgram"


class IncompatibleError(Error):
    """A plan or program built for another device or format version."""

    code = "Incompatible"


class UnsupportedError(Error):
    """Something this build or engine cannot do (no CUDA backend, an engine without streamable weights...)."""

    code = "Unsupported"


class NotFoundError(Error):
    """A name that does not exist: an input, a weight, a method, a backend."""

    code = "NotFound"


class InvalidStateError(Error):
    """A call at the wrong time: a closed engine, a budget change while execution contexts exist."""

    code = "InvalidState"


class OutOfMemoryError(Error, MemoryError):
    """Host or device memory ran out (the message says how much was needed)."""

    code = "OutOfMemory"


class DeviceError(Error):
    """The CUDA device reported an error."""

    code = "DeviceError"


class IoError(Error, OSError):
    """A file could not be read or written."""

    code = "IoError"

    def __init__(self, message: str) -> None:
        Error.__init__(self, message)

    def __str__(self) -> str:
        return self.message


class InternalError(Error):
    """A bug in streamrt: please report it with the message."""

    code = "Internal"


_BY_CODE = {cls.code: cls for cls in (
    InvalidArgumentError, InvalidModelError, InvalidPlanError, InvalidProgramError, IncompatibleError,
    UnsupportedError, NotFoundError, InvalidStateError, OutOfMemoryError, DeviceError, IoError, InternalError)}


def _from_status(code: str, message: str) -> Error:
    """The exception for a library status (called by the extension)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        err = Error(message)
        err.code = code
        return err
    return cls(message)
