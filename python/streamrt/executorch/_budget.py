"""Budget arguments of save / load / set_budget, checked before anything is exported or loaded.

A budget is None (not given), an int of bytes (>= 0) or a budget string streamrt's parser
accepts ("8GiB", "512MiB", "50%", "auto", "8589934592"). A value of another type is TypeError
(bool and float included: a float byte count is a mistake worth stopping); a negative int, an
int past 2^64 - 1, an empty or malformed string, or one holding NUL, is ValueError
(streamrt.InvalidArgumentError, which is one) naming the argument and the value.
"""

from __future__ import annotations

from typing import List, Tuple, Union

from . import _library

Budget = Union[None, int, str]
TOTAL = "weight_streaming_budget"
PER_ENGINE = "weight_streaming_budget_per_engine"
_MAX = 2**64 - 1


def budget_text(name: str, value: Union[int, str]) -> str:
    """`value` as the string the runtime parses; TypeError / ValueError as above."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{name}: expected None, an int (bytes) or a string such as \"8GiB\", \"50%\" or \"auto\", "
                        f"got {type(value).__name__} {value!r}")
    if isinstance(value, int):
        if value < 0 or value > _MAX:
            raise ValueError(f"{name}: {value} bytes is outside 0..2^64-1")
        return str(value)
    if not value:
        raise ValueError(f"{name}: empty string (leave it None for the automatic budget)")
    if "\0" in value:  # the C entry points would read the string up to it
        raise ValueError(f"{name}: {value!r} holds a NUL character")
    try:
        _library.check_budget(value)
    except ValueError as e:
        raise type(e)(f"{name}: {e}") from None
    return value


def budget_options(total: Budget, per_engine: Budget) -> List[Tuple[str, str]]:
    """The (key, value) pairs for a total and a per-engine budget, at most one of them given."""
    if total is not None and per_engine is not None:
        raise ValueError(f"give {TOTAL} (the program's total, split across its engines) or {PER_ENGINE}, not both")
    return [(k, budget_text(k, v)) for k, v in ((TOTAL, total), (PER_ENGINE, per_engine)) if v is not None]

