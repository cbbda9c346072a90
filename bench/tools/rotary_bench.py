#!/usr/bin/env python3
"""The Rotary kernel alone against HBM bandwidth and PyTorch (issue 16: memory-bound steps at 70 % of HBM).

    python3 bench/tools/rotary_bench.py OUTDIR [--streamrt BIN] [--cases a,b] [--iters 100] [--peak-gbs 4800]
    python3 bench/tools/rotary_bench.py OUTDIR --device cpu        (no GPU: builds each case, checks the fusion)

Each case is one ONNX graph of the rotate-half form a transformers export has, `x * cos + cat(-x2, x1) * sin`
(Slice, Neg, Concat, Mul, Add), over x [B, S, H, D] float16 and cos / sin [B, S, 1, D] graph inputs; streamrt's
builder fuses it into one Rotary step (the CPU mode fails a case where it does not). On CUDA: streamrt's median
per CUDA-graph run, the Rotary step's GPU time from `--profile-ops`, its bandwidth (x read, y written, cos and
sin read once) and share of --peak-gbs, beside PyTorch in the same process: eager (CUDA graph), torch.compile
(one generated kernel) and a device copy of x (the bandwidth a kernel of this size reaches); outputs checked
against eager. Writes OUTDIR/rotary.md and OUTDIR/rotary.jsonl.
"""
import argparse
import json
import os
import subprocess
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from step_bench import check_fused, finish, time_streamrt
from step_bench import torch_peers as step_torch_peers  # noqa: E402

CASES = {  # B, S, H, D
    "llama8b_q4096": (1, 4096, 32, 128),
    "llama8b_k4096": (1, 4096, 8, 128),
    "llama1b_q2048": (1, 2048, 32, 64),
    "llama1b_q512": (1, 512, 32, 64),
    "llama1b_k512": (1, 512, 8, 64),
    "qwen05_k512": (1, 512, 2, 64),
}


def write_model(path, b, s, h, d):
    import onnx
    from onnx import TensorProto, helper

    f16 = TensorProto.FLOAT16
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
    inits = [ints("half", [d // 2]), ints("end", [d]), ints("zero", [0]), ints("last", [-1])]
    nodes = [
        helper.make_node("Slice", ["x", "half", "end", "last"], ["x2"]),
        helper.make_node("Slice", ["x", "zero", "half", "last"], ["x1"]),
        helper.make_node("Neg", ["x2"], ["nx2"]),
        helper.make_node("Concat", ["nx2", "x1"], ["rot"], axis=-1),
        helper.make_node("Mul", ["x", "cos"], ["xc"]),
        helper.make_node("Mul", ["rot", "sin"], ["rs"]),
        helper.make_node("Add", ["xc", "rs"], ["y"]),
    ]
    inputs = [helper.make_tensor_value_info("x", f16, [b, s, h, d]),
              helper.make_tensor_value_info("cos", f16, [b, s, 1, d]),
              helper.make_tensor_value_info("sin", f16, [b, s, 1, d])]
    graph = helper.make_graph(nodes, "rotary", inputs, [helper.make_tensor_value_info("y", f16, [b, s, h, d])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def torch_peers(x, c, s, iters):
    import torch

    def rope(x, c, s):
        h = x.shape[-1] // 2
        return x * c + torch.cat((-x[..., h:], x[..., :h]), dim=-1) * s

    return step_torch_peers(rope, (x, c, s), x, iters)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--streamrt", default=os.environ.get("STREAMRT", "streamrt"))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--peak-gbs", type=float, default=4800.0, help="HBM bandwidth to compare with (H200: 4800)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--workdir", default="/tmp/rotary-bench")
    a = ap.parse_args()
    unknown = [c for c in a.cases.split(",") if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")
    os.makedirs(a.outdir, exist_ok=True)
    rows, failures = [], 0
    for name in a.cases.split(","):
        b, s, h, d = CASES[name]
        work = os.path.join(a.workdir, name)
        os.makedirs(work, exist_ok=True)
        model = os.path.join(work, "model.onnx")
        write_model(model, b, s, h, d)
        row = {"case": name, "shape": f"{b}x{s}x{h}x{d}"}
        try:
            check_fused(a.streamrt, model, work, f"x:{b}x{s}x{h}x{d},cos:{b}x{s}x1x{d},sin:{b}x{s}x1x{d}", "Rotary", only=False)
            row["fused"] = True
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            row["error"], failures = str(e)[:160], failures + 1
        if a.device == "cuda" and "error" not in row:
            import torch

            gen = torch.Generator(device="cuda").manual_seed(0)
            x = torch.randn(b, s, h, d, device="cuda", dtype=torch.float16, generator=gen)
            ang = torch.rand(b, s, 1, d // 2, device="cuda", generator=gen) * 6.28
            c, sn = torch.cat([ang.cos()] * 2, -1).half(), torch.cat([ang.sin()] * 2, -1).half()
            peers, ref = torch_peers(x, c, sn, a.iters)
            row.update(peers)
            try:
                row.update(time_streamrt(a.streamrt, model, work, (("x", x), ("cos", c), ("sin", sn)), a.iters, "Rotary", ref))
            except (RuntimeError, subprocess.TimeoutExpired, AttributeError) as e:
                row["error"], failures = str(e)[:160], failures + 1
            moved = (2 * b * s * h * d + 2 * b * s * d) * 2  # x read + y written, cos + sin read once
            for key in ("kernel_ms", "compile_ms", "copy_ms"):
                if row.get(key):
                    bytes_ = 2 * b * s * h * d * 2 if key == "copy_ms" else moved
                    row[key.replace("_ms", "_gbs")] = bytes_ / row[key] / 1e6
        rows.append(row)
        print(json.dumps(row), flush=True)
    cell = lambda r, k, fmt: fmt.format(r[k]) if r.get(k) is not None else "-"
    lines = ["| case | B x S x H x D | streamrt ms (graph) | Rotary kernel ms | GB/s | % of peak | torch.compile ms | GB/s | "
             "eager ms | copy of x GB/s | max abs err |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['shape']} | failed: {r['error']} |||||||||")
            continue
        pct = f"{r['kernel_gbs'] * 100 / a.peak_gbs:.0f} %" if r.get("kernel_gbs") else "-"
        lines.append(f"| {r['case']} | {r['shape']} | {cell(r, 'streamrt_ms', '{:.4f}')} | {cell(r, 'kernel_ms', '{:.4f}')} | "
                     f"{cell(r, 'kernel_gbs', '{:.0f}')} | {pct} | {cell(r, 'compile_ms', '{:.4f}')} | "
                     f"{cell(r, 'compile_gbs', '{:.0f}')} | {cell(r, 'eager_ms', '{:.4f}')} | {cell(r, 'copy_gbs', '{:.0f}')} | "
                     f"{cell(r, 'max_err', '{:.2e}')} |")
    finish(a.outdir, "rotary", rows, lines, failures)


if __name__ == "__main__":
    main()
