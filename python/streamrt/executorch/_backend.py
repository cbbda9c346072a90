"""StreamRTBackend.preprocess: one partition (an edge program) -> ONNX -> a streamrt engine ->
its engine record, the delegate's processed blob that the runtime's StreamRTBackend loads.

The partition goes through torch.onnx.export(..., dynamo=True) (weights as external data, so
a partition past protobuf's 2 GiB limit exports too), is built by streamrt.build for the device,
precision and weight streaming of its compile specs (CompileSettings), and the plan is wrapped
in an engine record by the runtime library (the record is streamrt's own format, written by
the same code the runtime verifies it with).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Dict, Iterator, List, Sequence

import torch
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec

from .. import _build
from . import _library
from ._partitioner import CompileSettings


def _example_inputs(edge_program) -> tuple:
    """Zeros shaped like the partition's user inputs (constants are part of the program)."""
    user = set(edge_program.graph_signature.user_inputs)
    return tuple(torch.zeros(n.meta["val"].shape, dtype=n.meta["val"].dtype)
                 for n in edge_program.graph.nodes if n.op == "placeholder" and n.name in user)


def _view_op(target):
    """The view op of an edge "*_copy" op (aten.slice_copy.Tensor -> aten.slice.Tensor), which
    the ONNX exporter translates (it lacks most copy variants); None for other ops."""
    packet, _, overload = getattr(target, "__name__", "").rpartition(".")
    if not packet.startswith("aten.") or not packet.endswith("_copy") or packet == "aten._to_copy":
        return None
    base = getattr(torch.ops.aten, packet[len("aten."):-len("_copy")], None)
    return getattr(base, overload, None) if base is not None else None


@contextlib.contextmanager
def _view_ops(edge_program) -> Iterator[None]:
    """Edge copy ops as their view ops while the partition is exported (restored afterwards:
    the edge program stays ExecuTorch's)."""
    changed = []
    for n in edge_program.graph.nodes:
        view = _view_op(n.target) if n.op == "call_function" else None
        if view is not None:
            changed.append((n, n.target))
            n.target = view
    try:
        yield
    finally:
        for n, target in changed:
            n.target = target


def export_onnx(edge_program, path: str, opset_version: int) -> None:
    """The partition as an ONNX file at `path` (weights as external data beside it)."""
    with torch.no_grad(), _view_ops(edge_program):
        torch.onnx.export(edge_program, _example_inputs(edge_program), path, dynamo=True, external_data=True,
                          opset_version=opset_version, verbose=False)


def build_engine(edge_program, settings: Dict[str, str], name: str):
    """The streamrt Engine of one partition, and the bytes of its plan."""
    with tempfile.TemporaryDirectory(prefix="streamrt-et-") as d:
        onnx_path = os.path.join(d, "partition.onnx")
        export_onnx(edge_program, onnx_path, int(settings.get("opset_version", "23")))
        engine = _build.build(onnx_path, device=settings["device"], fp16=settings["precision"] == "float16",
                              weight_streaming=settings["weight_streaming"] == "1", name=name,
                              min_streamable_bytes=settings.get("min_streamable_bytes"))
        plan_path = os.path.join(d, "engine.plan")
        engine.save(plan_path)
        with open(plan_path, "rb") as f:
            return engine, f.read()


class StreamRTBackend(BackendDetails):
    """ExecuTorch's ahead-of-time half of StreamRTBackend (the runtime half is the library)."""

    # What preprocess built, in order, for save()'s report: {"name", "streamable_size", "device"}.
    built: List[dict] = []

    @staticmethod
    def preprocess(edge_program, compile_specs: Sequence[CompileSpec]) -> PreprocessResult:
        settings = CompileSettings.parse(compile_specs)
        missing = {"engine_index", "device", "precision", "weight_streaming"} - set(settings)
        if missing:
            raise ValueError(f"StreamRTBackend.preprocess: compile specs lack {sorted(missing)} "
                             f"(partition with streamrt.executorch.StreamRTPartitioner)")
        name = f"streamrt_{settings['engine_index']}"
        engine, plan = build_engine(edge_program, settings, name)
        StreamRTBackend.built.append({"name": name, "device": engine.device,
                                      "streamable_size": engine.streamable_weights_size, "steps": engine.num_steps})
        engine.close()
        return PreprocessResult(processed_bytes=_library.engine_record(plan))
