#!/usr/bin/env python3
"""Makes the .pte fixtures of tests/executorch/ with ExecuTorch's own ahead-of-time flow.

streamrt.executorch does the lowering (its StreamRTPartitioner and StreamRTBackend.preprocess:
each partition is exported to ONNX, built by streamrt.build for the CPU with weight streaming
and wrapped in streamrt's engine record). Compile specs baked per delegate: engine_index,
engine_count and, when asked, a budget.

    STREAMRT_EXECUTORCH_LIBRARY=build-et/lib/libstreamrt_executorch.so \
        python3 scripts/make_executorch_fixtures.py [--out tests/executorch/fixtures]

Writes <name>.pte, <name>.input<i>.bin / <name>.output<i>.bin (raw little-endian float32,
the outputs computed by eager PyTorch; graph_break_ptd's also as .npy, for streamrt_et_run) and manifest.json (shapes, streamable sizes). The *_ptd
fixtures hold their engines' weights in ExecuTorch named data, in <name>.ptd beside the .pte
(weights="ptd"); each has the weights and inputs of the inline fixture it is named after.
--only NAME[,NAME] remakes those fixtures and keeps the others' manifest entries.
Needs the streamrt package (pip install .), executorch==1.5.1, torch and onnxscript
(scripts/executorch-requirements.txt), and the adapter library (streamrt.executorch finds it
next to the package or through $STREAMRT_EXECUTORCH_LIBRARY).
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np

import torch

import streamrt.executorch as se


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


def make(name, factory, shapes, out_dir, baked=None, weights="inline", seed=None):
    # The same weights and inputs on every run (`seed`: those of the fixture of that name).
    torch.manual_seed(zlib.crc32((seed or name).encode()))
    model = factory().eval()
    inputs = tuple(torch.randn(s) for s in shapes)
    with torch.no_grad():
        expected = model(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    # cumsum stays with ExecuTorch: GraphBreak becomes two engines.
    program, report = se.export(model, inputs, device="cpu", weight_streaming=True, torch_executed_ops=["aten.cumsum.default"],
                                weights=weights, ptd_name=name, **(baked or {}))
    with open(os.path.join(out_dir, name + ".pte"), "wb") as f:
        f.write(program.buffer)
    entry = {}
    if weights == "ptd":
        program.write_tensor_data_to_file(out_dir)  # <name>.ptd
        entry["ptd_bytes"] = os.path.getsize(os.path.join(out_dir, name + ".ptd"))
    for kind, ts in (("input", inputs), ("output", expected)):
        for i, t in enumerate(ts):
            t.detach().numpy().astype("<f4").tofile(os.path.join(out_dir, f"{name}.{kind}{i}.bin"))
            if name == "graph_break_ptd":  # also as .npy, for examples/executorch_run (streamrt_et_run)
                np.save(os.path.join(out_dir, f"{name}.{kind}{i}.npy"), t.detach().numpy().astype("<f4"))
    return {"inputs": [list(t.shape) for t in inputs], "outputs": [list(t.shape) for t in expected],
            "baked": baked or {}, "streamable": [e["streamable_size"] for e in report["engines"]],
            "pte_bytes": len(program.buffer), **entry}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/executorch/fixtures")
    ap.add_argument("--only", help="comma-separated fixture names to remake (default: all)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    fixtures = {
        "streaming": lambda: make("streaming", OneLinear, [(1, 128)], a.out),
        "baked": lambda: make("baked", OneLinear, [(1, 128)], a.out, {"weight_streaming_budget": "16KiB"}),
        "graph_break": lambda: make("graph_break", GraphBreak, [(1, 128)], a.out),
        "no_streaming": lambda: make("no_streaming", lambda: OneLinear(16, 8), [(2, 16)], a.out),
        "streaming_ptd": lambda: make("streaming_ptd", OneLinear, [(1, 128)], a.out, weights="ptd", seed="streaming"),
        "graph_break_ptd": lambda: make("graph_break_ptd", GraphBreak, [(1, 128)], a.out, weights="ptd",
                                        seed="graph_break"),
    }
    only = a.only.split(",") if a.only else list(fixtures)
    unknown = sorted(set(only) - set(fixtures))
    if unknown:
        ap.error(f"--only: no fixture {unknown} (fixtures: {sorted(fixtures)})")
    manifest_path = os.path.join(a.out, "manifest.json")
    manifest = {}
    if a.only and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    manifest.update({name: fixtures[name]() for name in only})
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    for k in only:
        v = manifest[k]
        ptd = f", .ptd {v['ptd_bytes']} bytes" if "ptd_bytes" in v else ""
        print(f"{k}: {v['pte_bytes']} bytes{ptd}, streamable {v['streamable']}, baked {v['baked']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
