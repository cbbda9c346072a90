"""What the single-step benches share (rotary_bench.py, membound_bench.py): running the streamrt CLI, checking
that a graph fused into the one step it is about, and timing streamrt's CUDA-graph run and that step's own kernel
against a reference output."""
import json
import os
import re
import subprocess
import sys

import numpy as np


def run(args, timeout=300):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1])
    return r


def check_fused(binary, model, work, shapes, step, only=True):
    """The plan of `model` (built for the CPU at `shapes`) has one `step` layer (the fusion took the pattern),
    and with `only` nothing else. Returns the plan's layers."""
    plan = os.path.join(work, "model.plan")
    run([binary, "build", model, "-o", plan, "--device", "cpu", "--shapes", shapes])
    lines = run([binary, "inspect", plan]).stdout.splitlines()
    layers = [l.split()[0] for l in lines if l.startswith("  ") and "->" in l]
    if (layers != [step]) if only else (layers.count(step) != 1):
        raise RuntimeError(f"the plan's layers are {layers}, expected {'only ' if only else ''}one {step}")
    return layers


def time_streamrt(binary, model, work, inputs, iters, step, ref):
    """Runs `model` on CUDA with `inputs` (name -> torch tensor, saved as .npy): the median ms per CUDA-graph run,
    the largest difference of output y from `ref` (a float32 numpy array) and `step`'s GPU time per run from
    --profile-ops (None when the profile has no such row)."""
    args = []
    for name, t in inputs:
        path = os.path.join(work, name + ".npy")
        np.save(path, t.cpu().numpy())
        args.append(f"--input={name}={path}")
    base = [binary, "run", model, "--device", "cuda", "--iterations", str(iters), "--warmup", "10"] + args
    r = run(base + ["--cuda-graph", "--output-dir", os.path.join(work, "out")])
    row = {"streamrt_ms": float(re.search(r"median ([0-9.]+) ms", r.stdout).group(1))}
    out = np.load(os.path.join(work, "out", "y.npy")).astype(np.float32)
    row["max_err"] = float(np.abs(out - ref).max())
    k = re.search(rf"^\s*{step}\b\S*.*?([0-9.]+) ms", run(base + ["--profile-ops"]).stderr, re.M)
    row["kernel_ms"] = float(k.group(1)) if k else None
    return row


def torch_peers(fn, args, copy_src, iters):
    """PyTorch on the same inputs, each in a CUDA graph: eager `fn(*args)`, torch.compile(fn) and a device copy of
    `copy_src` (the bandwidth a kernel of this size reaches). Returns the timings and eager's output (float32)."""
    import torch
    from cuda_graph_timing import graphed_median_ms

    res = {}
    res["eager_ms"], ref = graphed_median_ms(lambda: fn(*args), iters)
    try:
        compiled = torch.compile(fn)
        res["compile_ms"], _ = graphed_median_ms(lambda: compiled(*args), iters)
    except Exception as e:  # noqa: BLE001 - a failed peer is a table cell
        res["compile_error"] = str(e).splitlines()[0][:100]
    dst = torch.empty_like(copy_src)
    res["copy_ms"], _ = graphed_median_ms(lambda: dst.copy_(copy_src), iters)
    return res, ref.float().cpu().numpy()


def finish(outdir, stem, rows, lines, failures):
    """Writes OUTDIR/STEM.jsonl (the rows) and OUTDIR/STEM.md (the table's `lines`), prints the table and exits
    non-zero when a case failed."""
    with open(os.path.join(outdir, stem + ".jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    text = "\n".join(lines) + "\n"
    open(os.path.join(outdir, stem + ".md"), "w").write(text)
    print(text)
    sys.exit(1 if failures else 0)
