#!/usr/bin/env python3
"""Makes the .pte fixtures of tests/executorch/ with ExecuTorch's own ahead-of-time flow.

streamrt.executorch does the lowering (its StreamRTPartitioner and StreamRTBackend.preprocess:
each partition is exported to ONNX, built by streamrt.build for the CPU with weight streaming
and wrapped in streamrt's engine record). Compile specs baked per delegate: engine_index,
engine_count and, when asked, a budget.

    STREAMRT_EXECUTORCH_LIBRARY=build-et/lib/libstreamrt_executorch.so \
        python3 scripts/make_executorch_fixtures.py [--out tests/executorch/fixtures]

Writes <name>.pte, <name>.input<i>.bin / <name>.output<i>.bin (raw little-endian float32,
the outputs computed by eager PyTorch) and manifest.json (shapes, streamable sizes).
Needs the streamrt package (pip install .), executorch==1.5.1, torch and onnxscript
(scripts/executorch-requirements.txt), and the adapter library (streamrt.executorch finds it
next to the package or through $STREAMRT_EXECUTORCH_LIBRARY).
"""
import argparse
import json
import os
import sys
import zlib

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


def make(name, factory, shapes, out_dir, baked=None):
    torch.manual_seed(zlib.crc32(name.encode()))  # the same weights and inputs on every run
    model = factory().eval()
    inputs = tuple(torch.randn(s) for s in shapes)
    with torch.no_grad():
        expected = model(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    # cumsum stays with ExecuTorch: GraphBreak becomes two engines.
    program, report = se.export(model, inputs, device="cpu", weight_streaming=True, torch_executed_ops=["aten.cumsum.default"],
                                **(baked or {}))
    with open(os.path.join(out_dir, name + ".pte"), "wb") as f:
        f.write(program.buffer)
    for kind, ts in (("input", inputs), ("output", expected)):
        for i, t in enumerate(ts):
            t.detach().numpy().astype("<f4").tofile(os.path.join(out_dir, f"{name}.{kind}{i}.bin"))
    return {"inputs": [list(t.shape) for t in inputs], "outputs": [list(t.shape) for t in expected],
            "baked": baked or {}, "streamable": [e["streamable_size"] for e in report["engines"]],
            "pte_bytes": len(program.buffer)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/executorch/fixtures")
    a = ap.parse_args()
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
