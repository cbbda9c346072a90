#!/usr/bin/env python3
"""CPU float16 MatMul, streamrt next to onnxruntime (CPU execution provider), on this machine:

    python3 bench/cpu_half_matmul.py [--streamrt build/bin/streamrt] [--rows 1,4,16,64] [--k 4096]
        [--n 4096,11008] [--iters 20] [--warmup 3] [--threads 2] [--json OUT]

Per point a model Y[1, rows, n] = X[1, rows, k] @ W[k, n] with a float16 W (random, seeded), built by
`streamrt build --weight-streaming` (CPU) and run by `streamrt run` with everything resident (budget
100 %) and with W streamed from the plan file (budget 0, the file in the page cache); onnxruntime runs
the same ONNX file with `--threads` intra-op threads. Median latency over --iters runs after --warmup.
Rows up to 16 are a decode step's shape: streamrt reads W as stored (ops/half_gemm.h); more rows widen
W and call BLAS. Prints a markdown table; --json appends one line per point.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def int_list(s):
    return [int(x) for x in s.split(",") if x]


def write_model(path, rows, k, n):
    rng = np.random.default_rng(rows * 7 + n)
    w = (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(np.float16)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "half_matmul",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, rows, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, rows, n])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9  # what onnxruntime reads
    onnx.save(m, path)


def streamrt_median(exe, plan, budget, iters, warmup):
    out = subprocess.run([exe, "run", plan, "--device", "cpu", "--budget", budget, "--iterations", str(iters),
                          "--warmup", str(warmup)], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def ort_median(path, rows, k, iters, warmup, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((1, rows, k), dtype=np.float32).astype(np.float16)
    for _ in range(warmup):
        sess.run(None, {"x": x})
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, {"x": x})
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streamrt", default=os.path.join(ROOT, "build", "bin", "streamrt"))
    ap.add_argument("--rows", type=int_list, default=[1, 4, 16, 64])
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int_list, default=[4096, 11008])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", help="append one JSON line per point")
    a = ap.parse_args()
    if not os.access(a.streamrt, os.X_OK):
        sys.exit(f"error: no streamrt binary at {a.streamrt} (build first, or pass --streamrt)")
    print(f"| rows | k x n | weight MB | streamrt resident ms | streamrt budget 0 ms | onnxruntime ms "
          f"| onnxruntime / streamrt |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.n:
            for rows in a.rows:
                path, plan = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "m.plan")
                write_model(path, rows, a.k, n)
                subprocess.run([a.streamrt, "build", path, "-o", plan, "--device", "cpu", "--weight-streaming"],
                               capture_output=True, text=True, check=True)
                res = streamrt_median(a.streamrt, plan, "100%", a.iters, a.warmup)
                streamed = streamrt_median(a.streamrt, plan, "0", a.iters, a.warmup)
                ort_ms = ort_median(path, rows, a.k, a.iters, a.warmup, a.threads)
                mb = a.k * n * 2 / 1e6
                print(f"| {rows} | {a.k} x {n} | {mb:.1f} | {res:.3f} | {streamed:.3f} | {ort_ms:.3f} "
                      f"| {ort_ms / res:.2f}x |", flush=True)
                if a.json:
                    with open(a.json, "a") as f:
                        f.write(json.dumps(dict(rows=rows, k=a.k, n=n, weight_mb=mb, streamrt_resident_ms=res,
                                                streamrt_budget0_ms=streamed, onnxruntime_ms=ort_ms,
                                                threads=a.threads)) + "\n")


if __name__ == "__main__":
    main()
