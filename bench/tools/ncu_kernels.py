#!/usr/bin/env python3
"""Where a streamrt run's GPU time goes, kernel by kernel, from Nsight Compute (run on the GPU machine).

    python3 bench/tools/ncu_kernels.py PLAN [--streamrt BIN] [--input NAME=FILE ...] [--run-arg=ARG ...] [--top 25]
                                      [--csv OUT.csv]
    python3 bench/tools/ncu_kernels.py --from-csv OUT.csv [--runs 2]

Runs `ncu --metrics gpu__time_duration.sum streamrt run PLAN --iterations 1 --warmup 1` (no CUDA graph, so every
step is its own launch; two runs of the plan) and prints a markdown table: per kernel name (and grid), launches a
run, microseconds a run, share. ncu serializes the kernels, flushes the caches before each and locks the clocks:
compare its figures with each other (a kernel before and after a change), not with end-to-end times.
--from-csv reads a CSV written by an earlier call (or by `ncu --csv --print-units base`).
"""
import argparse
import collections
import csv
import io
import subprocess
import sys


def parse(text, runs):
    """{(kernel, grid): [launches, microseconds]} per run, from ncu's CSV (lines before the header skipped)."""
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit("no ncu CSV table in the input (was the run profiled?)")
    table = collections.defaultdict(lambda: [0, 0.0])
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].split(">(")[0] + ">" if ">(" in row["Kernel Name"] else row["Kernel Name"].split("(")[0]
        for noise in ("void ", "<unnamed>::", "unnamed>::", "streamrt::", "cuda::"):
            name = name.replace(noise, "")
        key = (name[:80], row.get("Grid Size", ""))
        table[key][0] += 1
        table[key][1] += float(row["Metric Value"].replace(",", "")) / 1e3  # ns -> us
    return {k: [v[0] / runs, v[1] / runs] for k, v in table.items()}


def report(table, top):
    total = sum(v[1] for v in table.values())
    print(f"{sum(v[0] for v in table.values()):.0f} launches, {total:.1f} us a run (ncu: serialized, caches flushed)\n")
    print("| kernel | grid | launches / run | us / run | % |")
    print("|---|---|---|---|---|")
    for (name, grid), (n, us) in sorted(table.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"| {name} | {grid} | {n:g} | {us:.1f} | {100 * us / total:.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plan", nargs="?")
    ap.add_argument("--streamrt", default="streamrt")
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy, passed to streamrt run")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--csv", help="also write ncu's CSV here")
    ap.add_argument("--from-csv", help="read this CSV instead of running ncu")
    ap.add_argument("--runs", type=int, default=2, help="runs of the plan in the CSV (warmup included)")
    ap.add_argument("--run-arg", action="append", default=[],
                    help="another argument for streamrt run (e.g. --run-arg=--no-few-row-kernel)")
    a = ap.parse_args()
    if a.from_csv:
        try:
            text = open(a.from_csv).read()
        except OSError as e:
            raise SystemExit(f"--from-csv: {e}")
    else:
        if not a.plan:
            ap.error("a PLAN (or --from-csv)")
        cmd = ["ncu", "--csv", "--metrics", "gpu__time_duration.sum", "--print-units", "base", a.streamrt, "run",
               a.plan, "--iterations", "1", "--warmup", "1"]
        for i in a.input:
            cmd += ["--input", i]
        cmd += a.run_arg
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr[-2000:])
            raise SystemExit(f"ncu exited with {p.returncode}")
        text = p.stdout
        if a.csv:
            open(a.csv, "w").write(text)
    report(parse(text, a.runs), a.top)


if __name__ == "__main__":
    main()
