#!/usr/bin/env python3
"""RMSNorm, SwiGLU gate and residual Add steps alone against HBM bandwidth and PyTorch (issue 16: memory-bound
steps at 70 % of HBM, or fused).

    python3 bench/tools/membound_bench.py OUTDIR [--streamrt BIN] [--cases a,b] [--iters 100] [--peak-gbs 4800]
    python3 bench/tools/membound_bench.py OUTDIR --device cpu        (no GPU: builds each case, checks the fusion)

Each case is one float16 ONNX graph (opset 17) of graph inputs at a transformer's activation sizes:
  rms_ROWSxHIDDEN     transformers' half-precision RMSNorm, `(x.float() * rsqrt(mean(x.float()^2) + eps)).half() * w`
                      (Cast, Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul, Cast, Mul by a [hidden] float16 weight
                      initializer): the builder fuses it into one RMSNormalization step;
  swiglu_ROWSxINTER   silu(g) * u as exported, `Mul(Mul(g, Sigmoid(g)), u)`: one FusedElementwise step;
  add_ROWSxHIDDEN     a residual Add of two [rows, hidden] tensors: one Add step.
The CPU mode fails a case whose plan is not that one step. On CUDA: streamrt's median per CUDA-graph run, the
step's GPU time from `--profile-ops`, its bandwidth (rms: x read, y written, the weight read once; swiglu: g and u
read, y written; add: two reads, one write) and share of --peak-gbs, beside PyTorch in the same process: eager
(CUDA graph), torch.compile (one generated kernel) and a device copy of the same byte count (read + write: the
bandwidth a kernel of this size reaches); outputs checked against eager. Writes OUTDIR/membound.md and
OUTDIR/membound.jsonl.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from step_bench import check_fused, finish, time_streamrt
from step_bench import torch_peers as step_torch_peers  # noqa: E402

EPS = 1e-6
# name: (kind, rows, cols); rms / add cols = hidden, swiglu cols = intermediate size.
CASES = {
    "rms_512x2048": ("rms", 512, 2048),
    "rms_2048x2048": ("rms", 2048, 2048),
    "rms_8192x2048": ("rms", 8192, 2048),
    "rms_4096x4096": ("rms", 4096, 4096),
    "rms_16384x4096": ("rms", 16384, 4096),
    "swiglu_512x8192": ("swiglu", 512, 8192),
    "swiglu_2048x8192": ("swiglu", 2048, 8192),
    "swiglu_8192x8192": ("swiglu", 8192, 8192),
    "swiglu_4096x14336": ("swiglu", 4096, 14336),
    "add_2048x2048": ("add", 2048, 2048),
    "add_8192x4096": ("add", 8192, 4096),
    "add_16384x4096": ("add", 16384, 4096),
}
STEP = {"rms": "RMSNormalization", "swiglu": "FusedElementwise", "add": "Add"}  # the one step each plan must have
INPUTS = {"rms": ("x",), "swiglu": ("g", "u"), "add": ("a", "b")}


def moved_bytes(kind, rows, cols):
    """Bytes the step must move at least (float16)."""
    n = rows * cols
    return {"rms": 2 * n + cols, "swiglu": 3 * n, "add": 3 * n}[kind] * 2


def rms_weight(cols):
    return (1.0 + 0.1 * np.random.default_rng(0).standard_normal(cols)).astype(np.float16)


def write_model(path, kind, rows, cols):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    f16, f32 = TensorProto.FLOAT16, TensorProto.FLOAT
    vi = lambda name, t=f16: helper.make_tensor_value_info(name, t, [rows, cols])
    if kind == "rms":  # LlamaRMSNorm / Qwen2RMSNorm in half precision, as torch.onnx exports it
        inits = [helper.make_tensor("two", f32, [], [2.0]), helper.make_tensor("eps", f32, [], [EPS]),
                 helper.make_tensor("axes", TensorProto.INT64, [1], [-1]), numpy_helper.from_array(rms_weight(cols), "w")]
        nodes = [
            helper.make_node("Cast", ["x"], ["xf"], to=f32),
            helper.make_node("Pow", ["xf", "two"], ["sq"]),
            helper.make_node("ReduceMean", ["sq", "axes"], ["var"], keepdims=1),
            helper.make_node("Add", ["var", "eps"], ["ve"]),
            helper.make_node("Sqrt", ["ve"], ["sd"]),
            helper.make_node("Reciprocal", ["sd"], ["rs"]),
            helper.make_node("Mul", ["xf", "rs"], ["nf"]),
            helper.make_node("Cast", ["nf"], ["nh"], to=f16),
            helper.make_node("Mul", ["w", "nh"], ["y"]),
        ]
    elif kind == "swiglu":  # act_fn(gate_proj(x)) * up_proj(x), SiLU exported as x * Sigmoid(x)
        inits = []
        nodes = [helper.make_node("Sigmoid", ["g"], ["sg"]),
                 helper.make_node("Mul", ["g", "sg"], ["silu"]),
                 helper.make_node("Mul", ["silu", "u"], ["y"])]
    else:  # residual + hidden_states
        inits = []
        nodes = [helper.make_node("Add", ["a", "b"], ["y"])]
    graph = helper.make_graph(nodes, kind, [vi(n) for n in INPUTS[kind]], [vi("y")], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def torch_peers(kind, ins, w, iters):
    import torch

    def rms(x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).half() * w

    fn = {"rms": rms, "swiglu": lambda g, u: torch.nn.functional.silu(g) * u, "add": lambda a, b: a + b}[kind]
    # The device copy reads and writes the step's byte count (half of it each way).
    src = torch.empty(moved_bytes(kind, *ins[0].shape) // 4, device="cuda", dtype=torch.float16)
    return step_torch_peers(fn, ins, src, iters)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--streamrt", default=os.environ.get("STREAMRT", "streamrt"))
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names, or kinds (rms, swiglu, add)")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--peak-gbs", type=float, default=4800.0, help="HBM bandwidth to compare with (H200: 4800)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--workdir", default="/tmp/membound-bench")
    a = ap.parse_args()
    names = []
    for c in a.cases.split(","):
        names += [n for n in CASES if CASES[n][0] == c] if c in STEP else [c]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)} (or rms, swiglu, add)")
    os.makedirs(a.outdir, exist_ok=True)
    rows, failures = [], 0
    for name in names:
        kind, nrows, cols = CASES[name]
        work = os.path.join(a.workdir, name)
        os.makedirs(work, exist_ok=True)
        model = os.path.join(work, "model.onnx")
        write_model(model, kind, nrows, cols)
        moved = moved_bytes(kind, nrows, cols)
        row = {"case": name, "shape": f"{nrows}x{cols}", "mb": round(moved / 1e6, 1)}
        try:
            row["layers"] = check_fused(a.streamrt, model, work, ",".join(f"{n}:{nrows}x{cols}" for n in INPUTS[kind]),
                                        STEP[kind])
            row["fused"] = True
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            row["error"], failures = str(e)[:160], failures + 1
        if a.device == "cuda" and "error" not in row:
            import torch

            gen = torch.Generator(device="cuda").manual_seed(0)
            ins = [torch.randn(nrows, cols, device="cuda", dtype=torch.float16, generator=gen) for _ in INPUTS[kind]]
            w = torch.from_numpy(rms_weight(cols)).cuda() if kind == "rms" else None
            peers, ref = torch_peers(kind, ins, w, a.iters)
            row.update(peers)
            try:
                row.update(time_streamrt(a.streamrt, model, work, list(zip(INPUTS[kind], ins)), a.iters, STEP[kind], ref))
            except (RuntimeError, subprocess.TimeoutExpired, AttributeError) as e:
                row["error"], failures = str(e)[:160], failures + 1
            for key in ("kernel_ms", "compile_ms", "copy_ms"):
                if row.get(key):
                    row[key.replace("_ms", "_gbs")] = moved / row[key] / 1e6
        rows.append(row)
        print(json.dumps(row), flush=True)
    cell = lambda r, k, fmt: fmt.format(r[k]) if r.get(k) is not None else "-"
    pct = lambda r, k: f"{r[k] * 100 / a.peak_gbs:.0f} %" if r.get(k) else "-"
    lines = ["| case | rows x cols | MB moved | step | streamrt ms (graph) | step kernel ms | GB/s | % of peak | "
             "torch.compile ms | GB/s | % of peak | eager ms | copy GB/s | % of peak | max abs err |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['shape']} | {r['mb']} | failed: {r['error']} |||||||||||")
            continue
        step = STEP[CASES[r["case"]][0]]
        lines.append(f"| {r['case']} | {r['shape']} | {r['mb']} | {step} | {cell(r, 'streamrt_ms', '{:.4f}')} | "
                     f"{cell(r, 'kernel_ms', '{:.4f}')} | {cell(r, 'kernel_gbs', '{:.0f}')} | {pct(r, 'kernel_gbs')} | "
                     f"{cell(r, 'compile_ms', '{:.4f}')} | {cell(r, 'compile_gbs', '{:.0f}')} | {pct(r, 'compile_gbs')} | "
                     f"{cell(r, 'eager_ms', '{:.4f}')} | {cell(r, 'copy_gbs', '{:.0f}')} | {pct(r, 'copy_gbs')} | "
                     f"{cell(r, 'max_err', '{:.2e}')} |")
    finish(a.outdir, "membound", rows, lines, failures)


if __name__ == "__main__":
    main()
