#!/usr/bin/env python3
"""Engine cache: build time cold vs cache hit, for the real-model fixtures (or given models).

For each model in tests/fixtures/models it times `streamrt build` (median of --repeat runs):
  plain  no cache
  miss   through a fresh, empty cache directory (builds, then stores the weight-stripped entry)
  hit    through the warm cache (loads the stripped plan, refits the model's weights)
Each cell is the fastest build time the CLI reported ("built ... in X ms": import, optimize, build
or load+refit, write the plan; wall time, fsyncs included) and, after the slash, the median CPU
time (user + system) of the whole process. On a shared machine wall times vary with its load: the
minimum and CPU times are the steadier measures.

Usage: bench/cache_bench.py [--streamrt build/bin/streamrt] [--repeat 7] [--device cpu|cuda]
                            [--model NAME=PATH[:build options]]...
  --model replaces the fixture list (e.g. --model "llama=/tmp/llama.onnx:--fp16"; options are split on
  spaces). On the GPU the build times include tactic timing, which a hit skips.
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {  # name -> build options (inputs with dynamic dims get a profile)
    "mlp": ["--profile", "input:1x784:8x784:32x784"],
    "lenet_bn": ["--profile", "input:1x1x28x28:8x1x28x28:32x1x28x28"],
    "tiny_gpt": ["--profile", "input_ids:1x1:1x32:4x64"],
    "tiny_llama": [],
    "squeezenet1_1": [],
}


def build(streamrt, model, opts, out, extra, device):
    cmd = [streamrt, "build", model, "-o", out, "--device", device, *opts, *extra]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    m = re.search(r"built .* in ([0-9.]+) ms", p.stdout)
    hit = "cache: hit" in p.stdout
    return float(m.group(1)), cpu, hit, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streamrt", default=os.path.join(ROOT, "build", "bin", "streamrt"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--model", action="append", default=[], metavar="NAME=PATH[:OPTIONS]")
    args = ap.parse_args()
    models = {}
    for spec in args.model:
        name, _, rest = spec.partition("=")
        path, _, opts = rest.partition(":")
        if not name or not os.path.isfile(path):
            sys.exit(f"--model {spec!r}: expected NAME=PATH[:OPTIONS] with an existing PATH")
        models[name] = (path, opts.split())
    if not models:
        models = {n: (os.path.join(ROOT, "tests", "fixtures", "models", n, "model.onnx"), o) for n, o in MODELS.items()}
    tmp = tempfile.mkdtemp(prefix="streamrt_cache_bench_")
    rows = []
    try:
        for name, (model, opts) in models.items():
            out = os.path.join(tmp, name + ".plan")
            times = {"plain": [], "miss": [], "hit": []}
            for r in range(args.repeat):
                times["plain"].append(build(args.streamrt, model, opts, out, [], args.device)[:2])
                cache = os.path.join(tmp, f"cache_{name}_{r}")
                t, w, hit, _ = build(args.streamrt, model, opts, out, ["--cache-dir", cache], args.device)
                assert not hit, "a fresh cache hit"
                times["miss"].append((t, w))
                t, w, hit, log = build(args.streamrt, model, opts, out, ["--cache-dir", cache], args.device)
                assert hit, "the warm cache missed:\n" + log
                times["hit"].append((t, w))
                shutil.rmtree(cache)
            size = sum(os.path.getsize(os.path.join(os.path.dirname(model), f)) for f in os.listdir(os.path.dirname(model))
                       if f == os.path.basename(model) or f.endswith(".data")) / 2**20
            med = {k: (min(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in times.items()}
            rows.append((name, size, med))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"build on {args.device}, {args.repeat} runs each: fastest CLI-reported build ms / median process CPU ms\n")
    print("| model | ONNX (+data) MiB | plain build | cache miss (cold) | cache hit | hit / miss |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, size, med in rows:
        cell = lambda k: f"{med[k][0]:.1f} / {med[k][1]:.0f}"
        print(f"| {name} | {size:.2f} | {cell('plain')} | {cell('miss')} | {cell('hit')} | "
              f"{med['hit'][0] / med['miss'][0]:.2f} |")


if __name__ == "__main__":
    main()
