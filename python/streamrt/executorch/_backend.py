"""StreamRTBackend.preprocess: one partition (an edge program) -> ONNX -> a streamrt engine ->
its engine record, the delegate's processed blob that the runtime's StreamRTBackend loads.

The partition goes through torch.onnx.export(..., dynamo=True) (weights as external data, so
a partition past protobuf's 2 GiB limit exports too), is built by streamrt.build for the device,
precision and weight streaming of its compile specs (CompileSettings), and the plan is wrapped
in an engine record by the runtime library (the record is streamrt's own format, written by
the same code the runtime verifies it with). With the compile spec weights="pte" or "ptd" the
record carries the plan without its weights section, which goes into ExecuTorch's named data
(NamedDataStore; "ptd": external, tagged with the .ptd's name) under a key the record names.
"""

from __future__ import annotations

import contextlib
import os
import struct
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


@contextlib.contextmanager
def _built(edge_program, settings: Dict[str, str], name: str) -> Iterator[tuple]:
    """The streamrt Engine of one partition and the path of its plan file (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="streamrt-et-") as d:
        onnx_path = os.path.join(d, "partition.onnx")
        export_onnx(edge_program, onnx_path, int(settings.get("opset_version", "23")))
        engine = _build.build(onnx_path, device=settings["device"], fp16=settings["precision"] == "float16",
                              weight_streaming=settings["weight_streaming"] == "1", name=name,
                              min_streamable_bytes=settings.get("min_streamable_bytes"),
                              weight_quant=settings.get("weight_quant", "none"))
        plan_path = os.path.join(d, "engine.plan")
        engine.save(plan_path)
        yield engine, plan_path


# Named data of the weights: page-aligned, so that no two engines' weights share a page (CUDA
# registers each engine's in place) and a mapped .ptd hands them out aligned.
WEIGHTS_ALIGNMENT = 4096
WEIGHTS_MODES = ("inline", "pte", "ptd")


def _section_file(plan_path: str, offset: int, size: int):
    """Bytes [offset, offset + size) of the plan file as ExecuTorch's FileBackedData (a temporary
    file, removed when the program no longer needs it): weights of any size never sit in memory."""
    from executorch.exir._serialize._cord import FileBackedData

    fd, path = tempfile.mkstemp(prefix="streamrt-weights-", suffix=".bin")
    try:
        with open(plan_path, "rb") as src, os.fdopen(fd, "wb") as dst:
            src.seek(offset)
            left = size
            while left:
                chunk = src.read(min(left, 16 << 20))
                if not chunk:
                    raise OSError(f"{plan_path}: ends before its weights section ({size} bytes at {offset})")
                dst.write(chunk)
                left -= len(chunk)
    except BaseException:
        os.remove(path)
        raise
    return FileBackedData(path, cleanup=True)


def _weights_apart(plan_path: str, name: str, settings: Dict[str, str]) -> PreprocessResult:
    """The engine record with the plan's weights section in ExecuTorch's named data: the .ptd
    `ptd_name` ("ptd") or the program's own ("pte"). The key names the engine and the section's
    checksum (from the plan's header), so that equal keys mean equal bytes across programs."""
    from executorch.exir._serialize._named_data_store import NamedDataStore

    with open(plan_path, "rb") as f:
        checksum = struct.unpack_from("<Q", f.read(64), 56)[0]  # PlanHeader::weights_checksum
    key = f"streamrt/{name}/weights-{checksum:016x}"
    record, offset, size = _library.engine_record_apart(plan_path, key)
    if size == 0:  # no weights section: nothing to hold apart
        return PreprocessResult(processed_bytes=record)
    store = NamedDataStore()
    tag = settings.get("ptd_name") if settings["weights"] == "ptd" else None
    store.add_named_data(key, _section_file(plan_path, offset, size), WEIGHTS_ALIGNMENT, external_tag=tag)
    return PreprocessResult(processed_bytes=record, data_store_output=store.get_named_data_store_output())


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
        weights = settings.setdefault("weights", "inline")
        if weights not in WEIGHTS_MODES:
            raise ValueError(f"StreamRTBackend.preprocess: compile spec weights={weights!r}, expected one of "
                             f"{WEIGHTS_MODES}")
        name = f"streamrt_{settings['engine_index']}"
        with _built(edge_program, settings, name) as (engine, plan_path):
            StreamRTBackend.built.append({"name": name, "device": engine.device,
                                          "streamable_size": engine.streamable_weights_size,
                                          "steps": engine.num_steps})
            engine.close()
            if weights != "inline":
                return _weights_apart(plan_path, name, settings)
            with open(plan_path, "rb") as f:
                return PreprocessResult(processed_bytes=_library.engine_record(f.read()))
