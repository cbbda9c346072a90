#!/usr/bin/env python3
"""Collects what bench/run_gpu.sh left in its logs folder (default OUTDIR/bench-logs) into
OUTDIR/bench.json, OUTDIR/bench.md and, when matplotlib imports, OUTDIR/bench.png.

    python3 bench/report.py OUTDIR [--logs DIR] [--elapsed-s N]

The logs folder holds points.txt, config.json, env.txt and per step <step>.log with <step>.rc
("status timeout_s wall_ms [budget_cut]"; budget_cut 1: the timeout was what the time budget had left) when the step ran, or <step>.skip (one line: why) when it did not. Steps per point <model>_b<batch>_<precision>:
build_, run_, rungraph_; per model: torch_eager_<model>, torch_compile_<model> (JSON lines).
"""
import argparse
import json
import os
import re

LATENCY_RE = re.compile(r"latency over (\d+) runs \(after (\d+) warmup\): min ([\d.]+) ms\s+median ([\d.]+) ms"
                        r"\s+max ([\d.]+) ms")
BUILT_RE = re.compile(r"^built .* in ([\d.]+) ms", re.M)
NODES_RE = re.compile(r"nodes: (.*)")  # "nodes: 722 imported, 283 folded, 0 removed, 102 fused away, 339 steps"
WEIGHTS_RE = re.compile(r"weights: ([\d.]+) MiB; activations: ([\d.]+) MiB planned")


class Step:
    """One step's outcome: ok (its log text) or an error line."""

    def __init__(self, logs, name):
        self.name = name
        self.text, self.error, self.wall_ms = "", None, None
        log, rc, skipf = (os.path.join(logs, name + ext) for ext in (".log", ".rc", ".skip"))
        if os.path.exists(skipf):
            self.error = read(skipf).strip() or "skipped"
            return
        if not os.path.exists(rc):
            self.error = "failed: did not run"
            return
        self.text = read(log) if os.path.exists(log) else ""
        parts = read(rc).split()
        status = int(parts[0]) if parts else 1
        timeout_s = parts[1] if len(parts) > 1 else "?"
        self.wall_ms = float(parts[2]) if len(parts) > 2 else None
        budget_cut = len(parts) > 3 and parts[3] == "1"  # the timeout was what the time budget had left
        if status in (124, 137):
            self.error = (f"n/a: time budget spent (stopped after {timeout_s}s)" if budget_cut
                          else f"failed: timed out after {timeout_s}s")
        elif status != 0:
            self.error = f"failed: {last_line(self.text) or f'exit status {status}'}"

    @property
    def ok(self):
        return self.error is None


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def last_line(text):
    """The most telling line of a failed step's log: the last error line, else the last line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    errors = [l for l in lines if re.match(r"^(error|Error|\w+Error|\w+Exception|RuntimeError)\b", l)]
    line = (errors or lines or [""])[-1]
    return line if len(line) <= 240 else line[:237] + "..."


def parse_run(step):
    if not step.ok:
        return {"error": step.error}
    m = LATENCY_RE.search(step.text)
    if not m:
        return {"error": f"failed: no latency line in the output ({last_line(step.text)})"}
    return {"runs": int(m.group(1)), "warmup": int(m.group(2)), "min_ms": float(m.group(3)),
            "median_ms": float(m.group(4)), "max_ms": float(m.group(5))}


def parse_build(step):
    if not step.ok:
        return {"error": step.error}
    out = {}
    if m := BUILT_RE.search(step.text):
        out["build_s"] = round(float(m.group(1)) / 1e3, 3)
    elif step.wall_ms is not None:
        out["build_s"] = round(step.wall_ms / 1e3, 3)
    if m := NODES_RE.search(step.text):
        for count, what in re.findall(r"(\d+) ([a-z ]+)", m.group(1)):
            out[what.strip().replace(" ", "_")] = int(count)
    if m := WEIGHTS_RE.search(step.text):
        out.update(weights_mib=float(m.group(1)), activations_mib=float(m.group(2)))
    return out


def torch_results(logs, model, impl):
    """{(batch, precision): record} from torch_peer's JSON lines, and the step (for its error)."""
    step = Step(logs, f"torch_{impl}_{model}")
    found = {}
    for line in step.text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("impl") == impl:
            found[(int(rec["batch"]), rec["precision"])] = rec
    return found, step


def torch_cell(found, step, batch, prec):
    rec = found.get((batch, prec))
    if rec is None:
        return {"error": step.error or "failed: no result"}
    if rec.get("median_ms") is None:
        return {"error": rec.get("error", "n/a")}
    keep = ("median_ms", "min_ms", "max_ms", "throughput", "unit", "compile_s", "tf32_matmul", "tf32_cudnn")
    return {k: rec[k] for k in keep if k in rec}


def export_info(logs, key):
    cached = os.path.join(logs, f"export_{key}.cached.json")
    if os.path.exists(cached):
        try:
            return dict(json.loads(read(cached)), cached=True)
        except ValueError:
            pass
    step = Step(logs, f"export_{key}")
    if not step.ok:
        return {"error": step.error}
    lines = [l for l in step.text.splitlines() if l.startswith("{")]
    try:
        return json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}


def collect(logs):
    config = {}
    if os.path.exists(os.path.join(logs, "config.json")):
        config = json.loads(read(os.path.join(logs, "config.json")))
    tiny = bool(config.get("tiny"))
    points = [p.split(":") for p in read(os.path.join(logs, "points.txt")).split() if p.count(":") == 2]
    torch_by_model = {}
    rows = []
    for model, batch, prec in points:
        batch = int(batch)
        seq = None if model == "resnet50" else (32 if tiny else 512)
        key = f"{model}_b{batch}" + (f"_s{seq}" if seq else "") + ("_tiny" if tiny else "")
        pt = f"{model}_b{batch}_{prec}"
        for impl in ("eager", "compile"):
            if (model, impl) not in torch_by_model:
                torch_by_model[(model, impl)] = torch_results(logs, model, impl)
        ex = export_info(logs, key)
        row = {"model": model, "batch": batch, "seq": seq, "precision": prec,
               "export": {k: ex[k] for k in ("error", "export_s", "nodes", "weight_bytes", "external_data",
                                              "op_types", "cached", "source") if k in ex},
               "build": parse_build(Step(logs, f"build_{pt}")),
               "streamrt": parse_run(Step(logs, f"run_{pt}")),
               "streamrt_cuda_graph": parse_run(Step(logs, f"rungraph_{pt}")),
               "torch_eager": torch_cell(*torch_by_model[(model, "eager")], batch, prec),
               "torch_compile": torch_cell(*torch_by_model[(model, "compile")], batch, prec)}
        best = [row[k]["median_ms"] for k in ("streamrt", "streamrt_cuda_graph") if "median_ms" in row[k]]
        row["streamrt_best_ms"] = min(best) if best else None
        for impl in ("eager", "compile"):
            ref = row[f"torch_{impl}"].get("median_ms")
            row[f"speedup_vs_{impl}"] = round(ref / row["streamrt_best_ms"], 3) if ref and best else None
        rows.append(row)
    return rows, config


def env_info(logs):
    path = os.path.join(logs, "env.txt")
    return read(path).strip().splitlines() if os.path.exists(path) else []


def fmt_ms(cell):
    if "median_ms" in cell:
        return f"{cell['median_ms']:.3f}"
    return md_escape(cell.get("error", "n/a"))


def md_escape(text, limit=140):
    """A table cell: one line, no column breaks, long messages cut (bench.json has them whole)."""
    text = text.replace("\n", " ")
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return text.replace("|", "\\|")


def shape_label(row):
    return f"{row['batch']}x{row['seq']}" if row["seq"] else str(row["batch"])


def markdown(rows, env, config, elapsed_s):
    out = ["# streamrt vs PyTorch", ""]
    out += [f"    {l}" for l in env]
    out += ["", f"Median latency in ms over {config.get('iters', '?')} runs after {config.get('warmup', '?')} "
            f"warmup runs, one forward at a time (synchronous). streamrt builds from a float32 ONNX export "
            f"with --fp16 / --bf16 (graph inputs and outputs stay float32); PyTorch runs the same module "
            f"with weights and inputs in the precision. Speedup = torch median / best streamrt median "
            f"(with or without CUDA graph); > 1 means streamrt is faster."
            + (" float32 points are built with --tf32 (TF32 tensor cores for convolutions and GEMMs), the "
               "counterpart of PyTorch's default cuDNN TF32 convolutions." if config.get("tf32") else ""), ""]
    out.append("| model | batch | precision | streamrt build s | streamrt median ms | streamrt w/ CUDA graph ms "
               "| torch eager ms | torch.compile ms | speedup vs eager | speedup vs compile |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        build = f"{r['build']['build_s']:.2f}" if "build_s" in r["build"] else md_escape(r["build"].get("error", "n/a"))
        sp = lambda v: f"{v:.2f}x" if v else "-"  # noqa: E731
        out.append(f"| {r['model']} | {shape_label(r)} | {r['precision']} | {build} | {fmt_ms(r['streamrt'])} "
                   f"| {fmt_ms(r['streamrt_cuda_graph'])} | {fmt_ms(r['torch_eager'])} | {fmt_ms(r['torch_compile'])} "
                   f"| {sp(r['speedup_vs_eager'])} | {sp(r['speedup_vs_compile'])} |")
    extra = []
    for r in rows:
        c = r["torch_compile"].get("compile_s")
        if c is not None:
            extra.append(f"{r['model']} {shape_label(r)} {r['precision']}: {c:.0f}s")
    if extra:
        out += ["", "torch.compile time (first call): " + "; ".join(extra) + "."]
    if any(r["torch_eager"].get("tf32_cudnn") for r in rows):
        out += ["", "PyTorch float32 runs use its defaults: cuDNN convolutions may use TF32, matmuls do not."]
    exports = {}
    for r in rows:
        e = r["export"]
        if "nodes" in e:
            exports.setdefault(r["model"], e)
    if exports:
        out += ["", "ONNX exports (opset 17, float32):", ""]
        for model, e in exports.items():
            ops = ", ".join(f"{k} {v}" for k, v in sorted(e.get("op_types", {}).items(), key=lambda kv: -kv[1]))
            out.append(f"- {model}: {e['nodes']} nodes, {e.get('weight_bytes', 0) / 1e6:.0f} MB of weights"
                       f"{' (external data)' if e.get('external_data') else ''}; {ops}")
    if elapsed_s is not None:
        out += ["", f"Total run time {elapsed_s:.0f}s."]
    return "\n".join(out) + "\n"


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - no matplotlib: no picture
        return False
    series = [("streamrt", "streamrt"), ("streamrt_cuda_graph", "streamrt + CUDA graph"),
              ("torch_eager", "torch eager"), ("torch_compile", "torch.compile")]
    labels = [f"{r['model']}\n{shape_label(r)} {r['precision']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(rows)), 5))
    width = 0.8 / len(series)
    for i, (key, name) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(rows))]
        ys = [r[key].get("median_ms", 0) or 0 for r in rows]
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("median latency (ms, log scale)")
    ax.set_yscale("log")
    ax.set_title("streamrt vs PyTorch (missing bar: failed or n/a)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--logs", default=None, help="run_gpu.sh's logs folder (default OUTDIR/bench-logs)")
    ap.add_argument("--elapsed-s", type=float, default=None)
    args = ap.parse_args()
    logs = args.logs or os.path.join(args.outdir, "bench-logs")
    rows, config = collect(logs)
    env = env_info(logs)
    with open(os.path.join(args.outdir, "bench.json"), "w") as f:
        json.dump({"env": env, "config": config, "elapsed_s": args.elapsed_s, "points": rows}, f, indent=1)
    md = markdown(rows, env, config, args.elapsed_s)
    with open(os.path.join(args.outdir, "bench.md"), "w") as f:
        f.write(md)
    plotted = plot(rows, os.path.join(args.outdir, "bench.png"))
    print(md)
    print(f"wrote {args.outdir}/bench.json, bench.md{', bench.png' if plotted else ' (no matplotlib: no bench.png)'}")


if __name__ == "__main__":
    main()
