"""What the single-step benches share (rotary_bench.py, membound_bench.py): running the streamrt CLI, checking
that a graph fused into the one step it is about, and timing streamrt's CUDA-graph run and that step's own kernel
against a reference output."""
import os
import re
import subprocess

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
    layers = [l.split()[0] for l in run([binary, "inspect", plan]).stdout.splitlines() if l.startswith("  ") and "->" in l]
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
