#!/usr/bin/env python3
"""Decode GEMVs on compressed weights against the fp16 GEMV (issue 19, resident decode).

A model of eight MatMuls, [rows, K] x [K, N] then [rows, N] x [N, K] alternately (fp16 random weights:
a decode step's up / down projections), per shape and row count, built with --weight-quant none
(cuBLASLt) / int8 / int4:128 / int4:32 and run by `streamrt run --cuda-graph` (median of --iterations
replays). Prints a markdown table (weight GB/s = the weight bytes the kernels read / median time)
and writes gemv.jsonl to OUTDIR.

  python3 bench/quant/gemv.py OUTDIR [--bin DIR] [--iterations 200] [--shapes 2048x8192,4096x14336] [--rows 1,8]
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SCHEMES = [("fp16", "none", 2.0), ("int8", "int8", 1.0), ("int4:128", "int4:128", 0.5),
           ("int4:32", "int4:32", 0.5)]
LAYERS = 8


def make_model(path, k, n, rows):
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i in range(LAYERS):
        shape = (k, n) if i % 2 == 0 else (n, k)
        w = (rng.standard_normal(shape, dtype=np.float32) * (1.0 / np.sqrt(shape[0]))).astype(np.float16)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        out = "y" if i == LAYERS - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out]))
        prev = out
    graph = helper.make_graph(nodes, "gemvs", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [rows, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [rows, k])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return LAYERS * k * n


def median_ms(binary, model, quant, iterations, device):
    cmd = [binary, "run", model, "--device", device, "--iterations", str(iterations), "--weight-quant", quant]
    cmd += ["--cuda-graph"] if device == "cuda" else []
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    m = re.search(r"median ([0-9.]+) ms", proc.stdout + proc.stderr)
    if proc.returncode != 0 or not m:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-800:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--bin", default=os.environ.get("STREAMRT_BIN_DIR", "build/bin"))
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--shapes", default="2048x8192,4096x14336")
    ap.add_argument("--rows", default="1,8")
    ap.add_argument("--device", default="cuda", help="cuda; cpu for a self-test of the script")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    binary = os.path.join(args.bin, "streamrt")
    rows_list = [int(r) for r in args.rows.split(",")]
    lines = ["| K x N | rows | scheme | weight MB | median ms | weight GB/s | x fp16 time |", "|---|---|---|---|---|---|---|"]
    with open(os.path.join(args.outdir, "gemv.jsonl"), "w") as log:
        for shape in args.shapes.split(","):
            k, n = (int(v) for v in shape.split("x"))
            for rows in rows_list:
                model = os.path.join(args.outdir, f"gemv_{k}x{n}_r{rows}.onnx")
                elements = make_model(model, k, n, rows)
                base = None
                for name, quant, bytes_per in SCHEMES:
                    name = name if args.device == "cuda" else name.replace(" (cuBLASLt)", "")  # the CPU's own kernel
                    try:
                        ms = median_ms(binary, model, quant, args.iterations, args.device)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print(f"{shape} rows {rows} {name}: {e}", file=sys.stderr)
                        lines.append(f"| {k} x {n} | {rows} | {name} | - | failed | - | - |")
                        continue
                    weight_bytes = elements * bytes_per
                    base = ms if quant == "none" else base
                    rec = dict(k=k, n=n, rows=rows, scheme=name, weight_bytes=weight_bytes, median_ms=ms,
                               gbps=weight_bytes / ms / 1e6)
                    log.write(json.dumps(rec) + "\n")
                    ratio = f"{ms / base:.2f}x" if base and quant != "none" else "-"
                    lines.append(f"| {k} x {n} | {rows} | {name} | {weight_bytes / 1e6:.0f} | {ms:.3f} | "
                                 f"{rec['gbps']:.0f} | {ratio} |")
                os.remove(model)
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.outdir, "gemv.md"), "w") as f:
        f.write(table + "\n")


if __name__ == "__main__":
    main()
