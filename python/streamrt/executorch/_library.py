"""libstreamrt_executorch.so: StreamRTBackend for ExecuTorch's runtime, loaded into this process.

Loading it (ctypes, RTLD_LOCAL: made global, the system onnx symbols it carries would override
those of the ``onnx`` Python module and break exports) registers "StreamRTBackend" in the backend
registry that ``executorch.runtime`` uses. It resolves symbols of ExecuTorch's runtime from libraries that
``import torch`` loads first, so torch is imported before it. Where it is looked for, in order:

1. ``$STREAMRT_EXECUTORCH_LIBRARY`` (a path to the .so), for a build tree;
2. next to the package (``streamrt/libstreamrt_executorch.so``), where ``pip install .`` puts it.

The library's C entry points (streamrt_executorch.h) are wrapped here; failures raise
streamrt's exception of the matching kind with streamrt's message.
"""

from __future__ import annotations

import ctypes
import os
import re
from typing import Optional, Sequence, Tuple

from .. import _errors

ENV = "STREAMRT_EXECUTORCH_LIBRARY"
NAME = "libstreamrt_executorch.so"

# ExecuTorch's runtime::Error codes (executorch/runtime/core/error.h) -> streamrt's exception.
_ERRORS = {
    0x12: _errors.InvalidArgumentError,  # InvalidArgument
    0x13: _errors.InvalidArgumentError,  # InvalidType
    0x10: _errors.UnsupportedError,  # NotSupported
    0x11: _errors.UnsupportedError,  # NotImplemented
    0x20: _errors.NotFoundError,  # NotFound
    0x2: _errors.InvalidStateError,  # InvalidState
    0x23: _errors.InvalidProgramError,  # InvalidProgram
    0x30: _errors.IncompatibleError,  # DelegateInvalidCompatibility
    0x31: _errors.OutOfMemoryError,  # DelegateMemoryAllocationFailed
    0x22: _errors.IoError,  # AccessFailed
}


def candidates() -> Tuple[str, ...]:
    """The paths tried, in order."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), NAME)
    env = os.environ.get(ENV)
    return (env, here) if env else (here,)


def _load() -> Tuple[ctypes.CDLL, str]:
    import torch  # noqa: F401  (before the library: see the module docstring)

    tried = []
    for path in candidates():
        if not os.path.isfile(path):
            tried.append(f"{path} (no such file)")
            continue
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        return lib, path
    raise ImportError(f"streamrt.executorch: {NAME} not found; tried {', '.join(tried)}. Install streamrt "
                      f"built with ExecuTorch (pip install . with executorch installed), or set {ENV} to the "
                      f"library of a build tree (build-et/lib/{NAME}).")


LIB, PATH = _load()
_u64, _sz, _cp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_char_p
for _name, _args in {
    "streamrt_executorch_set_option": [_cp, _cp],
    "streamrt_executorch_get_option": [_cp, _cp, _sz],
    "streamrt_executorch_begin_load": [ctypes.POINTER(_cp), ctypes.POINTER(_cp), _sz, ctypes.POINTER(_u64)],
    "streamrt_executorch_end_load": [_u64],
    "streamrt_executorch_set_scope_option": [_u64, _cp, _cp],
    "streamrt_executorch_get_scope_option": [_u64, _cp, _cp, _sz],
    "streamrt_executorch_check_budget": [_cp],
    "streamrt_executorch_check_ptd": [_cp],
    "streamrt_executorch_engine_record": [_cp, _sz, ctypes.c_void_p, _sz, ctypes.POINTER(_sz)],
    "streamrt_executorch_engine_record_apart": [_cp, _cp, ctypes.c_void_p, _sz, ctypes.POINTER(_sz),
                                                ctypes.POINTER(_u64), ctypes.POINTER(_u64)],
}.items():
    _f = getattr(LIB, _name)
    _f.argtypes, _f.restype = _args, ctypes.c_int
LIB.streamrt_executorch_last_error.argtypes, LIB.streamrt_executorch_last_error.restype = [], _cp


def _check(rc: int, what: str) -> None:
    if rc == 0:
        return
    message = (LIB.streamrt_executorch_last_error() or b"").decode(errors="replace") or f"{what} failed"
    raise _ERRORS.get(rc, _errors.Error)(f"{message} (ExecuTorch error 0x{rc:x})")


def load_error(error: Exception) -> _errors.Error:
    """ExecuTorch's exception for a failed load (its message carries ExecuTorch's error code) as
    streamrt's exception of the matching kind: with StreamRTBackend's message when the failure was
    StreamRTBackend's (begin_load cleared the last error), ExecuTorch's otherwise (a .ptd or .pte
    its own loader refused)."""
    match = re.search(r"0x:?([0-9a-fA-F]+)", str(error))
    rc = int(match.group(1), 16) if match else -1
    ours = (LIB.streamrt_executorch_last_error() or b"").decode(errors="replace")
    return _ERRORS.get(rc, _errors.Error)(f"{ours} ({error})" if ours else str(error))


def check_budget(value: str) -> None:
    """InvalidArgumentError (a ValueError) unless streamrt's parser accepts `value`."""
    _check(LIB.streamrt_executorch_check_budget(value.encode()), "check_budget")


def check_ptd(path: str) -> None:
    """InvalidProgramError unless the .ptd at `path` is well formed (its header, FlatBuffer and
    segments; the weights are checked by the engines), IoError when it cannot be read. ExecuTorch
    1.5.1 reads a .ptd's FlatBuffer unverified: a corrupted one would crash this process."""
    _check(LIB.streamrt_executorch_check_ptd(os.fsencode(path)), "check_ptd")


def engine_record(plan: bytes) -> bytes:
    """StreamRTBackend's processed blob around the bytes of a plan file."""
    needed = _sz(0)
    _check(LIB.streamrt_executorch_engine_record(plan, len(plan), None, 0, ctypes.byref(needed)), "engine_record")
    out = ctypes.create_string_buffer(needed.value)
    _check(LIB.streamrt_executorch_engine_record(plan, len(plan), out, needed.value, ctypes.byref(needed)),
           "engine_record")
    return out.raw


def engine_record_apart(plan_path: str, weights_key: str) -> Tuple[bytes, int, int]:
    """The processed blob of the plan file at `plan_path` with its weights held apart under
    `weights_key` in the program's named data: (record, offset, size) of the weights section in
    the file, which the caller puts into named data; size 0: the plan has none (an ordinary record)."""
    needed, offset, size = _sz(0), _u64(0), _u64(0)
    args = (os.fsencode(plan_path), weights_key.encode())
    _check(LIB.streamrt_executorch_engine_record_apart(*args, None, 0, ctypes.byref(needed), ctypes.byref(offset),
                                                       ctypes.byref(size)), "engine_record_apart")
    out = ctypes.create_string_buffer(needed.value)
    _check(LIB.streamrt_executorch_engine_record_apart(*args, out, needed.value, ctypes.byref(needed),
                                                       ctypes.byref(offset), ctypes.byref(size)), "engine_record_apart")
    return out.raw, offset.value, size.value


def begin_load(options: Sequence[Tuple[str, str]]) -> int:
    keys = (_cp * max(len(options), 1))(*[k.encode() for k, _ in options])
    values = (_cp * max(len(options), 1))(*[v.encode() for _, v in options])
    scope = _u64(0)
    _check(LIB.streamrt_executorch_begin_load(keys, values, len(options), ctypes.byref(scope)), "load options")
    return scope.value


def end_load(scope: int) -> None:
    LIB.streamrt_executorch_end_load(scope)


def set_option(scope: Optional[int], key: str, value: str) -> None:
    """ExecuTorch's set_option for the engines of a load scope (None: every loaded engine)."""
    if scope is None:
        _check(LIB.streamrt_executorch_set_option(key.encode(), value.encode()), f"set_option {key}")
    else:
        _check(LIB.streamrt_executorch_set_scope_option(scope, key.encode(), value.encode()), f"set_option {key}")


def get_option(scope: Optional[int], key: str) -> str:
    buf = ctypes.create_string_buffer(256)
    if scope is None:
        rc = LIB.streamrt_executorch_get_option(key.encode(), buf, 256)
    else:
        rc = LIB.streamrt_executorch_get_scope_option(scope, key.encode(), buf, 256)
    _check(rc, f"get_option {key}")
    return buf.value.decode()
