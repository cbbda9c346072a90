#!/usr/bin/env python3
"""Makes the .pte fixtures of tests/executorch/ with ExecuTorch's own ahead-of-time flow.

A Python Partitioner tags the nodes StreamRT takes (an allowlist of edge ops); the
BackendDetails subclass named StreamRTBackend preprocesses each partition: it exports the
edge-dialect partition to ONNX (torch.onnx.export(..., dynamo=True), needs onnxscript), builds
a CPU engine with the streamrt CLI (`streamrt compile --device cpu --weight-streaming`, which
wraps the plan in streamrt's engine record) and returns that record as the processed blob.
Compile specs baked per delegate: engine_index, engine_count and, when asked, a budget.

    python3 scripts/make_executorch_fixtures.py [--streamrt build/bin/streamrt] [--out tests/executorch/fixtures]

Writes <name>.pte, <name>.input<i>.bin / <name>.output<i>.bin (raw little-endian float32,
the outputs computed by eager PyTorch) and manifest.json (shapes, streamable sizes).
Needs executorch==1.5.1, torch and onnxscript (scripts/executorch-requirements.txt).
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import torch
from executorch.exir import EdgeCompileConfig, to_edge
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

BACKEND = "StreamRTBackend"
STREAMRT_CLI = "build/bin/streamrt"  # set from --streamrt

# Edge ops whose ONNX export streamrt runs (Gemm/MatMul, Transpose, Relu, Add, Mul, Reshape).
# Anything else stays with ExecuTorch's kernels (the fixtures break the graph on cumsum).
SUPPORTED_OPS = {
    "aten.addmm.default", "aten.mm.default", "aten.permute_copy.default", "aten.t_copy.default",
    "aten.relu.default", "aten.add.Tensor", "aten.mul.Tensor", "aten.view_copy.default",
}


def _op_name(node):
    # Edge ops print as "aten.addmm.default".
    return getattr(node.target, "__name__", str(node.target))


class StreamRTPartitioner(Partitioner):
    """Tags maximal connected runs of supported ops; one DelegationSpec per partition, so each
    engine gets its index, the engine count and the baked budget as compile specs."""

    def __init__(self, baked=None):
        super().__init__()
        self.baked = baked or {}  # {"weight_streaming_budget": "32KiB"} or the per-engine key

    def partition(self, exported_program):
        class Support(OperatorSupportBase):
            def is_node_supported(self, submodules, node):
                return node.op == "call_function" and _op_name(node) in SUPPORTED_OPS

        gm = exported_program.graph_module
        parts = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True).propose_partitions()
        order = {n: i for i, n in enumerate(gm.graph.nodes)}
        parts = sorted(parts, key=lambda p: min(order[n] for n in p.nodes))  # program order
        tags = {}
        for i, p in enumerate(parts):
            tag = f"streamrt_{i}"
            specs = [CompileSpec("engine_index", str(i).encode()), CompileSpec("engine_count", str(len(parts)).encode())]
            specs += [CompileSpec(k, v.encode()) for k, v in self.baked.items()]
            tags[tag] = DelegationSpec(BACKEND, specs)
            for n in p.nodes:
                n.meta["delegation_tag"] = tag
        tag_constant_data(exported_program)  # the weights go into the engine, not the delegate's inputs
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)


def _record_from_program(path):
    """The engine record of the only delegate of a streamrt program (`streamrt compile`'s .pte):
    its segments section holds just that record (no kernel calls, so no constants)."""
    info = json.loads(subprocess.run([STREAMRT_CLI, "inspect", path, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    (method,) = info["methods"]
    if len(method["delegates"]) != 1 or any("kernel" in i for i in method["instructions"]):
        raise RuntimeError(f"streamrt split the partition: {json.dumps(method['instructions'])}")
    (d,) = method["delegates"]
    data = open(path, "rb").read()
    magic, _ver, _hs, _fo, _fs, sec_off, sec_size, _ck, _rs = struct.unpack_from("<8sIIQQQQQQ", data, 0)
    assert magic == b"SRTPROG\0" and info["segments"] == 1 and d["segment"] == 0, "unexpected program layout"
    record = data[sec_off:sec_off + d["bytes"]]
    assert record[:8] == b"SRTENGN\0", "segment 0 is not an engine record"
    return record, d["engine"]


class StreamRTBackend(BackendDetails):
    @staticmethod
    def preprocess(edge_program, compile_specs):
        with tempfile.TemporaryDirectory() as tmp:
            onnx_path, pte_path = os.path.join(tmp, "part.onnx"), os.path.join(tmp, "part.pte")
            args = tuple(torch.zeros(s.meta["val"].shape, dtype=s.meta["val"].dtype)
                         for s in edge_program.graph.nodes
                         if s.op == "placeholder" and s.name in edge_program.graph_signature.user_inputs)
            torch.onnx.export(edge_program, args, onnx_path, dynamo=True, external_data=False, verbose=False)
            subprocess.run([STREAMRT_CLI, "compile", onnx_path, "-o", pte_path, "--device", "cpu",
                            "--weight-streaming"], check=True, capture_output=True)
            record, engine = _record_from_program(pte_path)
        StreamRTBackend.engines.append(engine)
        return PreprocessResult(processed_bytes=record)


StreamRTBackend.engines = []  # what the last lowering built (streamable sizes for the manifest)


class OneLinear(torch.nn.Module):
    """One delegate: Linear(128, 128) -> ReLU; its 64 KiB weight is streamable."""

    def __init__(self, n_in=128, n_out=128):
        super().__init__()
        self.fc = torch.nn.Linear(n_in, n_out)

    def forward(self, x):
        return torch.relu(self.fc(x))


class GraphBreak(torch.nn.Module):
    """Two delegates (Linear 128->128 + ReLU; Linear 128->256) around cumsum, which the
    partitioner leaves to ExecuTorch: streamable 64 KiB and 128 KiB."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(128, 128), torch.nn.Linear(128, 256)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(torch.cumsum(h, dim=1) * 0.05)


def make(name, factory, shapes, out_dir, baked=None):
    torch.manual_seed(zlib.crc32(name.encode()))  # the same weights and inputs on every run
    model = factory().eval()
    inputs = tuple(torch.randn(s) for s in shapes)
    with torch.no_grad():
        expected = model(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    StreamRTBackend.engines = []
    edge = to_edge(torch.export.export(model, inputs), compile_config=EdgeCompileConfig(_check_ir_validity=False))
    program = edge.to_backend(StreamRTPartitioner(baked)).to_executorch()
    with open(os.path.join(out_dir, name + ".pte"), "wb") as f:
        f.write(program.buffer)
    for kind, ts in (("input", inputs), ("output", expected)):
        for i, t in enumerate(ts):
            t.detach().numpy().astype("<f4").tofile(os.path.join(out_dir, f"{name}.{kind}{i}.bin"))
    return {"inputs": [list(t.shape) for t in inputs], "outputs": [list(t.shape) for t in expected],
            "baked": baked or {}, "streamable": [e["streamable_bytes"] for e in StreamRTBackend.engines],
            "pte_bytes": len(program.buffer)}


def main():
    global STREAMRT_CLI
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streamrt", default="build/bin/streamrt")
    ap.add_argument("--out", default="tests/executorch/fixtures")
    a = ap.parse_args()
    STREAMRT_CLI = os.path.abspath(a.streamrt)
    os.makedirs(a.out, exist_ok=True)
    manifest = {
        "streaming": make("streaming", OneLinear, [(1, 128)], a.out),
        "baked": make("baked", OneLinear, [(1, 128)], a.out, {"weight_streaming_budget": "16KiB"}),
        "graph_break": make("graph_break", GraphBreak, [(1, 128)], a.out),
        "no_streaming": make("no_streaming", lambda: OneLinear(16, 8), [(2, 16)], a.out),
    }
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    for k, v in manifest.items():
        print(f"{k}: {v['pte_bytes']} bytes, streamable {v['streamable']}, baked {v['baked']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
