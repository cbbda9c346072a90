"""streamrt inside ExecuTorch: export PyTorch models to ExecuTorch programs (.pte) whose
supported subgraphs are StreamRT engines with weight streaming, and run them with ExecuTorch's
own runtime.

    import streamrt.executorch as se
    se.save(model, "model.pte", arg_inputs=(x,), weight_streaming=True,
            weight_streaming_budget=None, device="cpu")          # None | "8GiB" | "50%" | int
    se.save(model, "big.pte", arg_inputs=(x,), weights="ptd")     # weights in big.ptd beside it
    prog = se.load("big.pte", data_path="big.ptd")

    prog = se.load("model.pte", weight_streaming_budget="50%")   # a load-time budget
    y = prog.forward(x)
    prog.set_budget("1GiB")                                      # live, this program only

Importing this module loads libstreamrt_executorch.so (see _library), which registers
StreamRTBackend with ExecuTorch's runtime: ``executorch.runtime.Runtime.get().load_program``
then runs StreamRT delegates too, with the budget baked at export or the automatic one.
:func:`load` adds what ExecuTorch's Python runtime lacks: a load-time budget and a live change
for one program. Budgets: bytes (int), "8GiB"/"512MiB" (binary units), "50%" of the
streamable size, or "auto"; ``weight_streaming_budget`` is the program's total, split across its
engines in proportion to their streamable sizes; ``weight_streaming_budget_per_engine`` is each
engine's own. Which applies: the load-time budget, else the baked one, else automatic.
"""

from __future__ import annotations

import os
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from .. import _C, _errors
from . import _library
from ._backend import WEIGHTS_MODES, StreamRTBackend
from ._budget import PER_ENGINE, TOTAL, Budget, budget_options, budget_text
from ._partitioner import SUPPORTED_OPS, CompileSettings, StreamRTPartitioner

__all__ = ["save", "export", "load", "Program", "StreamRTPartitioner", "StreamRTBackend", "CompileSettings",
           "SUPPORTED_OPS", "set_budget", "get_option", "library_path"]

library_path: str = _library.PATH


def _device(device: Optional[str]) -> str:
    if device is None or device == "auto":
        return "cuda" if _C.cuda_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device: expected \"cpu\", \"cuda\" or \"auto\", got {device!r}")
    return device


def export(model: Any, arg_inputs: Sequence[Any] = (), kwarg_inputs: Optional[Mapping[str, Any]] = None, *,
           device: Optional[str] = None, fp16: bool = False, weight_streaming: bool = False,
           weight_streaming_budget: Budget = None, weight_streaming_budget_per_engine: Budget = None,
           min_streamable_bytes: Union[None, int, str] = None, weight_quant: str = "none",
           torch_executed_ops: Sequence[str] = (),
           dynamic_shapes: Any = None, opset_version: int = 23, weights: str = "inline",
           ptd_name: str = "model") -> Tuple[Any, dict]:
    """`model` (a torch.nn.Module, put in eval mode, or a torch.export.ExportedProgram) lowered
    to an ExecuTorch program: (ExecutorchProgramManager, report). See :func:`save`; with
    weights="ptd" the engines' weights are named data of the .ptd `ptd_name`, which
    ``program.write_tensor_data_to_file(folder)`` writes as ``folder/<ptd_name>.ptd``."""
    import torch
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    budget = budget_options(weight_streaming_budget, weight_streaming_budget_per_engine)
    if budget and not weight_streaming:
        raise ValueError(f"{budget[0][0]}={budget[0][1]!r} needs weight_streaming=True (an engine built without "
                         f"weight streaming has no streamable weights)")
    if min_streamable_bytes is not None:
        min_streamable_bytes = budget_text("min_streamable_bytes", min_streamable_bytes)
    _C.parse_weight_quant(weight_quant)  # ValueError here, before anything is exported
    if weights not in WEIGHTS_MODES:
        raise ValueError(f"weights: expected one of {WEIGHTS_MODES}, got {weights!r}")
    if weights == "ptd" and (not isinstance(ptd_name, str) or not ptd_name or os.sep in ptd_name):
        raise ValueError(f"ptd_name: expected a file name without folder, got {ptd_name!r}")
    settings = CompileSettings(device=_device(device), fp16=bool(fp16), weight_streaming=bool(weight_streaming),
                               budget=budget[0] if budget else None, min_streamable_bytes=min_streamable_bytes,
                               weight_quant=weight_quant, opset_version=opset_version, weights=weights, ptd_name=ptd_name)
    if isinstance(model, torch.export.ExportedProgram):
        ep = model
    elif isinstance(model, torch.nn.Module):
        args = tuple(arg_inputs) if isinstance(arg_inputs, (tuple, list)) else (arg_inputs,)
        with torch.no_grad():
            ep = torch.export.export(model, args, dict(kwarg_inputs or {}), dynamic_shapes=dynamic_shapes)
    else:
        raise TypeError(f"model: expected a torch.nn.Module or torch.export.ExportedProgram, got {type(model).__name__}")
    StreamRTBackend.built = []
    partitioner = StreamRTPartitioner(settings, tuple(torch_executed_ops))
    # _skip_dim_order: dtype casts stay aten._to_copy, which the ONNX exporter knows.
    edge = to_edge_transform_and_lower(ep, partitioner=[partitioner],
                                       compile_config=EdgeCompileConfig(_check_ir_validity=False,
                                                                        _skip_dim_order=True))
    executorch_ops = sorted({str(getattr(n.target, "__name__", n.target))
                             for n in edge.exported_program().graph.nodes
                             if n.op == "call_function" and "executorch_call_delegate" not in str(n.target)
                             and "getitem" not in str(n.target)})
    report = {"engines": list(StreamRTBackend.built), "executorch_ops": executorch_ops, "device": settings.device,
              "baked": dict(budget), "weights": weights}
    return edge.to_executorch(), report


def save(model: Any, path: Union[str, os.PathLike], arg_inputs: Sequence[Any] = (),
         kwarg_inputs: Optional[Mapping[str, Any]] = None, **options: Any) -> dict:
    """Exports `model` on `arg_inputs` / `kwarg_inputs` and writes the ExecuTorch program to `path`.

    device: "cpu", "cuda" or None / "auto" (CUDA when a GPU answers): the engines' target.
    fp16: float32 layers run in half precision. weight_streaming: large weights (at least
    min_streamable_bytes, default 64 KiB) are streamable. weight_quant: "none", "int8", "fp8" or
    "int4[:GROUP]", the engines' MatMul / Gemm weights stored and streamed compressed (as
    streamrt.build's). weight_streaming_budget (the total) or
    weight_streaming_budget_per_engine: a budget baked into the program (see the module
    docstring), None for automatic at load; a bad one raises TypeError / ValueError here, before
    anything is exported. torch_executed_ops: edge op names left to ExecuTorch's kernels.
    dynamic_shapes goes to torch.export; opset_version to the ONNX export of each partition.
    weights: where the engines' weights go. "inline" (default): inside each delegate's blob in
    the .pte. "ptd": ExecuTorch named data in a .ptd file written next to the .pte (model.pte ->
    model.ptd; its name is the .pte's without the extension), which the loader is given
    (:func:`load`'s data_path, ``Runtime.load_program(pte, data_path=ptd)``, C++
    ``Module(pte, ptd)``); the engines then read their weights in place from that (mapped) file,
    and the program has no 2 GiB limit. "pte": ExecuTorch named data inside the .pte.

    Returns a report: {"engines": [{"name", "device", "streamable_size", "steps"}],
    "executorch_ops": [edge ops ExecuTorch runs], "device", "baked": {key: value}, "weights",
    and "ptd": the .ptd's path when weights="ptd"}.
    """
    path = os.fspath(path)
    if options.get("weights") == "ptd":
        options["ptd_name"] = os.path.splitext(os.path.basename(path))[0]
    program, report = export(model, arg_inputs, kwarg_inputs, **options)
    with open(path, "wb") as f:
        program.write_to_file(f)
    if report["weights"] == "ptd":
        program.write_tensor_data_to_file(os.path.dirname(os.path.abspath(path)))
        report["ptd"] = os.path.splitext(path)[0] + ".ptd"
    return report


class Program:
    """A .pte loaded by ExecuTorch's runtime with every method, its StreamRT engines initialized
    with this program's load-time budget. ``program`` is ExecuTorch's Program."""

    def __init__(self, path: Union[str, os.PathLike, bytes], options: List[Tuple[str, str]],
                 data_path: Union[None, str, os.PathLike] = None) -> None:
        from executorch.runtime import Runtime

        data = os.fspath(data_path) if data_path is not None else None
        if data is not None:
            _library.check_ptd(data)  # before ExecuTorch's loader, which does not verify it
        self._scope = _library.begin_load(options)
        try:
            self.program = Runtime.get().load_program(path if isinstance(path, bytes) else os.fspath(path),
                                                      data_path=data)
            self.methods = {name: self.program.load_method(name) for name in sorted(self.program.method_names)}
        except RuntimeError as e:  # ExecuTorch's, for any failed load: streamrt's kind and message
            raise _library.load_error(e) from e
        finally:
            _library.end_load(self._scope)

    def forward(self, *inputs: Any) -> List[Any]:
        return self.execute("forward", inputs)

    def execute(self, method: str, inputs: Sequence[Any]) -> List[Any]:
        if method not in self.methods:
            raise _errors.NotFoundError(f"no method '{method}' (methods: {sorted(self.methods)})")
        return list(self.methods[method].execute(list(inputs)))

    @property
    def num_engines(self) -> int:
        """StreamRT engines of this program (0 when nothing was delegated to StreamRT)."""
        return int(_library.get_option(self._scope, "num_engines"))

    @property
    def weight_streaming_budget(self) -> int:
        """Bytes in force, over all engines of this program."""
        return int(_library.get_option(self._scope, TOTAL)) if self.num_engines else 0

    @property
    def engine_budgets(self) -> List[int]:
        """Bytes in force per engine, in engine order."""
        return [int(_library.get_option(self._scope, f"{TOTAL}.{i}")) for i in range(self.num_engines)]

    @property
    def streamable_weights_size(self) -> List[int]:
        """Streamable bytes per engine."""
        return [int(_library.get_option(self._scope, f"streamable_weights_size.{i}")) for i in range(self.num_engines)]

    def set_budget(self, weight_streaming_budget: Budget = None, *, per_engine: Budget = None) -> None:
        """Changes this program's budget live (a total, or per engine): executions in flight
        finish, the engines' contexts are recreated; on failure the old budgets stay."""
        options = budget_options(weight_streaming_budget, per_engine)
        if not options:
            raise ValueError("set_budget: give a budget (\"auto\" for the automatic one)")
        _library.set_option(self._scope, *options[0])


def load(path: Union[str, os.PathLike, bytes], *, weight_streaming_budget: Budget = None,
         weight_streaming_budget_per_engine: Budget = None, data_path: Union[None, str, os.PathLike] = None) -> Program:
    """Loads a .pte with ExecuTorch's runtime, the StreamRT engines at this load-time budget
    (over the baked one; None: the baked one, else automatic). A bad budget is TypeError /
    ValueError before loading. A program that fails to load (a bad baked budget, a corrupt or
    missing .ptd, a corrupt .pte) raises streamrt's error of ExecuTorch's code (InvalidProgramError
    for InvalidProgram, ...), with StreamRTBackend's message where the failure was its own.
    data_path: the .ptd saved with a program whose weights are there (save(..., weights="ptd")),
    checked before ExecuTorch reads it (InvalidProgramError when malformed, IoError when unreadable)."""
    return Program(path, budget_options(weight_streaming_budget, weight_streaming_budget_per_engine), data_path)


def set_budget(weight_streaming_budget: Budget = None, *, per_engine: Budget = None) -> None:
    """ExecuTorch's set_option for StreamRTBackend: the new budget for EVERY StreamRT engine loaded
    in this process (programs loaded with executorch.runtime directly included)."""
    options = budget_options(weight_streaming_budget, per_engine)
    if not options:
        raise ValueError("set_budget: give a budget (\"auto\" for the automatic one)")
    _library.set_option(None, *options[0])


def get_option(key: str) -> str:
    """ExecuTorch's get_option for StreamRTBackend over every loaded engine: "num_engines",
    "weight_streaming_budget[.i]", "streamable_weights_size[.i]" (decimal strings)."""
    return _library.get_option(None, key)
