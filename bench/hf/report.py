#!/usr/bin/env python3
"""Collects what bench/hf/run.sh left in OUTDIR/logs into OUTDIR/hf.json, OUTDIR/hf.md (printed) and, when
matplotlib imports, OUTDIR/hf.png.

    python3 bench/hf/report.py OUTDIR [--logs DIR] [--elapsed-s N]

Steps (bench/report.py's Step: <step>.log + <step>.rc "status timeout_s wall_ms", or <step>.skip): per point
<model>_b<batch>_<kind><n>: srt_ (streamrt run, with --cuda-graph on CUDA), srtng_ (again without the graph
when the capture failed); at the profile point srtbuild_, srtprof_ (STREAMRT_PROFILE=1), srtinspect_; per model
export_<model>_<kind> (+ .json), inputs_<model>, torch_<model>_<group> (+ .jsonl: torch_peer.py's records).
"""
import argparse
import collections
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from report import BUILT_RE, LATENCY_RE, NODES_RE, Step, last_line, md_escape, read  # noqa: E402  (bench/report.py)

IMPLS = (("eager", "eager"), ("compile", "torch.compile"), ("ro", "reduce-overhead"))
STEPS_RE = re.compile(r"engine '.*' on (\w+): (\d+) steps, ([\d.]+) MiB weights, ([\d.]+) MiB activations")
PROFILE_RE = re.compile(r"^\s+(\S+)(?: (\S*))?\s+([\d.]+) ms\s+([\d.]+)%\s+(\d+) steps$", re.M)
GOAL_SPEEDUP = 1.3


def load_json(path, default=None):
    try:
        return json.loads(read(path))
    except (OSError, ValueError):
        return default


def parse_streamrt(logs, key):
    """The point's streamrt result: latency, whether the CUDA graph ran, steps; or its error."""
    graph, plain = Step(logs, "srt_" + key), Step(logs, "srtng_" + key)
    tried_plain = os.path.exists(os.path.join(logs, f"srtng_{key}.rc"))
    use, note = (plain, f"no CUDA graph ({graph.error})") if (not graph.ok and tried_plain) else (graph, None)
    if not use.ok:
        err = use.error if not tried_plain else f"{plain.error} (with --cuda-graph: {graph.error})"
        return {"error": err}
    m = LATENCY_RE.search(use.text)
    if not m:
        return {"error": f"failed: no latency line ({last_line(use.text)})"}
    out = {"median_ms": float(m.group(4)), "min_ms": float(m.group(3)), "max_ms": float(m.group(5)),
           "runs": int(m.group(1)), "wall_s": round((use.wall_ms or 0) / 1e3, 1), "cuda_graph": note is None}
    if note:
        out["note"] = note
    if s := STEPS_RE.search(use.text):
        out.update(device=s.group(1), steps=int(s.group(2)), weights_mib=float(s.group(3)),
                   activations_mib=float(s.group(4)))
    return out


def parse_profile(logs, key):
    """streamrt's per-op GPU time at the profile point: by op type, and the top rows by op and output dims."""
    out = {}
    step = Step(logs, "srtprof_" + key)
    rows = [dict(op=op, dims=dims or "", ms=float(ms), pct=float(pct), steps=int(n))
            for op, dims, ms, pct, n in PROFILE_RE.findall(step.text) if op != "total"]
    if not step.ok:
        out["error"] = step.error
    elif not rows:
        out["error"] = "no profile table (STREAMRT_PROFILE prints one on CUDA only)"
    else:
        by_op = collections.defaultdict(lambda: [0.0, 0])
        for r in rows:
            by_op[r["op"]][0] += r["ms"]
            by_op[r["op"]][1] += r["steps"]
        total = sum(v[0] for v in by_op.values())
        out["by_op"] = sorted(({"op": k, "ms": round(v[0], 4), "pct": round(100 * v[0] / max(total, 1e-12), 1),
                                "steps": v[1]} for k, v in by_op.items()), key=lambda r: -r["ms"])
        out.update(top=sorted(rows, key=lambda r: -r["ms"])[:15], total_ms=round(total, 4))
    b = Step(logs, "srtbuild_" + key)
    if b.ok:
        if m := BUILT_RE.search(b.text):
            out["build_s"] = round(float(m.group(1)) / 1e3, 2)
        if m := NODES_RE.search(b.text):
            out["nodes"] = m.group(1).strip()
    ins = Step(logs, "srtinspect_" + key)
    if ins.ok and "layers (" in ins.text:
        layers = ins.text.split("layers (", 1)[1].splitlines()[1:]
        counts = collections.Counter(l.split()[0] for l in layers if l.startswith("  ") and len(l.split()) > 2
                                     and "->" in l)
        out["plan_layers"] = dict(counts.most_common())
    return out


def torch_records(logs, model):
    recs = {}
    for path in sorted(glob.glob(os.path.join(logs, f"torch_{model}_*.jsonl"))):
        for line in read(path).splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            recs[(int(r["batch"]), r["kind"], int(r["n"]), r["impl"])] = r
    steps = [Step(logs, os.path.basename(p)[:-4]) for p in glob.glob(os.path.join(logs, f"torch_{model}_*.rc"))]
    steps += [Step(logs, os.path.basename(p)[:-5]) for p in glob.glob(os.path.join(logs, f"torch_{model}_*.skip"))]
    return recs, [s.error for s in steps if not s.ok]


def point_label(kind, n):
    if kind == "prefill":
        return "1 token" if n == 1 else f"{n} tokens"
    return f"decode @{n}"


def collect(logs):
    config = load_json(os.path.join(logs, "config.json"), {})
    batches = [int(b) for b in str(config.get("batches", "1,8")).split(",") if b]
    points = [(p.split(":")[0], int(p.split(":")[1])) for p in str(config.get("points", "")).split(",") if ":" in p]
    impls = [i for i in str(config.get("impls", "eager,compile,ro")).split(",") if i]
    rows, exports, profiles = [], {}, {}
    for model in str(config.get("models", "llama qwen")).split():
        for kind in ("prefill", "decode"):
            info = load_json(os.path.join(logs, f"export_{model}_{kind}.json"))
            exports[f"{model}_{kind}"] = info if info else {"error": Step(logs, f"export_{model}_{kind}").error
                                                            or "failed: no export.json"}
        recs, torch_errors = torch_records(logs, model)
        for b in batches:
            for kind, n in points:
                key = f"{model}_b{b}_{kind}{n}"
                row = dict(model=model, batch=b, kind=kind, n=n, key=key, streamrt=parse_streamrt(logs, key))
                for impl in impls:
                    r = recs.get((b, kind, n, impl))
                    if r is None:
                        row[impl] = {"error": (torch_errors[0] if torch_errors else None) or "failed: no result"}
                    elif r.get("median_ms") is None:
                        row[impl] = {"error": r.get("error", "n/a")}
                    else:
                        row[impl] = {k: r[k] for k in ("median_ms", "min_ms", "max_ms", "wall_median_ms",
                                                         "compile_s") if r.get(k) is not None}
                    if r and impl == "eager":
                        if "check" in r:
                            row["check"] = r["check"]
                        if "profile" in r:
                            profiles.setdefault(key, {})["torch_eager"] = r["profile"]
                s = row["streamrt"].get("median_ms")
                for impl in impls:
                    t = row[impl].get("median_ms")
                    if s and t:
                        row[f"x_{impl}"] = round(t / s, 3)
                rows.append(row)
                if os.path.exists(os.path.join(logs, f"srtprof_{key}.rc")) or os.path.exists(
                        os.path.join(logs, f"srtprof_{key}.skip")):
                    profiles.setdefault(key, {})["streamrt"] = parse_profile(logs, key)
    return dict(config=config, rows=rows, exports=exports, profiles=profiles, goals=goals(rows))


def goals(rows):
    """Issue 16: streamrt at or below reduce-overhead everywhere, >= 1.3x at one token and in decode."""
    at_or_below, speedup, missing = [], [], []
    for r in rows:
        x = r.get("x_ro")
        if x is None:
            missing.append(r["key"])
            continue
        if x < 1.0:
            at_or_below.append(r["key"])
        if (r["kind"] == "decode" or r["n"] == 1) and x < GOAL_SPEEDUP:
            speedup.append(r["key"])
    return dict(slower_than_ro=at_or_below, under_1_3x=speedup, not_compared=missing,
                met=not at_or_below and not speedup and not missing)


def check_cell(r):
    c = r.get("check")
    if not c:
        return "not checked" if r["streamrt"].get("median_ms") else "-"
    if "error" in c:
        return md_escape("failed: " + c["error"], 60)
    s = f"err {c['logits_max_abs_err']:.2g} (of {c['logits_max_abs']:.2g}), top-1 {100 * c['top1_agree']:.1f}%"
    if "present_max_abs_err" in c:
        s += f", KV err {c['present_max_abs_err']:.2g}"
    return s


def ms_cell(cell):
    if "median_ms" not in cell:
        return md_escape(cell.get("error", "n/a"), 80)
    s = f"{cell['median_ms']:.3f}"
    if cell.get("cuda_graph") is False and cell.get("device") == "cuda":
        s += " (no graph)"
    return s


def markdown(rep, env, elapsed_s):
    rows, cfg = rep["rows"], rep["config"]
    out = ["# streamrt vs PyTorch on transformers exports (issue 16)", ""]
    out += [f"- {l}" for l in env]
    out += [f"- {cfg.get('iters')} timed runs after {cfg.get('warmup')} warmup, median ms; streamrt: `streamrt run "
            "model.onnx --shapes <point> --cuda-graph` (host wall time of each synchronous execute); PyTorch: CUDA "
            "events around each forward. Speedup = reduce-overhead ms / streamrt ms.",
            f"- run took {elapsed_s} s" if elapsed_s is not None else "", ""]
    out += ["| model | batch | point | streamrt ms | eager ms | compile ms | reduce-overhead ms | x reduce-overhead "
            "| x eager | check (streamrt vs eager) |", "|---|---|---|---|---|---|---|---|---|---|"]
    labels = {"llama": "Llama-3.2-1B", "qwen": "Qwen2.5-0.5B", "llama8b": "Llama-3.1-8B (4 layers)"}
    for r in rows:
        x = lambda k: f"{r[k]:.2f}x" if k in r else "-"  # noqa: E731
        out.append(f"| {labels.get(r['model'], r['model'])} | {r['batch']} | {point_label(r['kind'], r['n'])} | "
                   f"{ms_cell(r['streamrt'])} | {ms_cell(r.get('eager', {}))} | {ms_cell(r.get('compile', {}))} | "
                   f"{ms_cell(r.get('ro', {}))} | {x('x_ro')} | {x('x_eager')} | {check_cell(r)} |")
    g = rep["goals"]
    out += ["", "Goal (streamrt <= reduce-overhead everywhere, >= 1.3x at 1 token and in decode): "
            + ("**met**" if g["met"] else "**not met**")
            + (f"; slower than reduce-overhead: {', '.join(g['slower_than_ro'])}" if g["slower_than_ro"] else "")
            + (f"; under 1.3x: {', '.join(g['under_1_3x'])}" if g["under_1_3x"] else "")
            + (f"; not compared: {', '.join(g['not_compared'])}" if g["not_compared"] else ""), ""]
    out += ["## Exports (torch.onnx.export dynamo=True, float16, external data)", "",
            "| model | kind | export s | nodes | note |", "|---|---|---|---|---|"]
    for k, e in rep["exports"].items():
        m, kind = k.rsplit("_", 1)
        out.append(f"| {m} | {kind} | {e.get('export_s', '-')} | {e.get('nodes', '-')} | "
                   f"{md_escape(e.get('error', 'ok'), 100)} |")
    for key, p in rep["profiles"].items():
        out += ["", f"## Per-op GPU time at {key}", ""]
        s = p.get("streamrt", {})
        if "by_op" in s:
            out += [f"streamrt (STREAMRT_PROFILE=1, eager run without CUDA graph, sum of per-step GPU times "
                    f"{s['total_ms']:.3f} ms/run):", "",
                    "| op | ms / run | % | steps / run |", "|---|---|---|---|"]
            out += [f"| {o['op']} | {o['ms']:.3f} | {o['pct']:.1f} | {o['steps']} |" for o in s["by_op"]]
            out += ["", "Top steps by op and output dims:", "", "| op | dims | ms / run | % | steps |",
                    "|---|---|---|---|---|"]
            out += [f"| {o['op']} | {o['dims']} | {o['ms']:.3f} | {o['pct']:.1f} | {o['steps']} |" for o in s["top"]]
        elif s:
            out += [f"streamrt: {md_escape(s.get('error', 'n/a'))}"]
        if "plan_layers" in s:
            out += ["", f"streamrt plan ({s.get('nodes', '?')}; build {s.get('build_s', '?')} s), layers: "
                    + ", ".join(f"{k} {v}" for k, v in s["plan_layers"].items())]
        t = p.get("torch_eager")
        if t:
            out += ["", "PyTorch eager (torch.profiler, self device time per run, top 25):", "",
                    "| op / kernel | ms / run | calls / run |", "|---|---|---|"]
            out += [f"| {md_escape(o['name'], 80)} | {o['ms']:.3f} | {o['calls']} |" for o in t]
    return "\n".join(out) + "\n"


def plot(rows, path):
    """Speedup of streamrt over each peer per point (peer ms / streamrt ms), the goal lines at 1 and 1.3."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - no matplotlib: no picture
        return False
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(models), figsize=(7 * len(models), 4.5), squeeze=False, sharey=True)
    for ax, model in zip(axes[0], models):
        mine = [r for r in rows if r["model"] == model]
        xs = range(len(mine))
        for impl, name in IMPLS:
            ax.plot(xs, [r.get(f"x_{impl}", float("nan")) for r in mine], marker="o", linestyle="", label=name)
        for y, style in ((1.0, "-"), (GOAL_SPEEDUP, "--")):
            ax.axhline(y, color="grey", linestyle=style, linewidth=0.8)
        ax.set_xticks(list(xs), [f"b{r['batch']} {point_label(r['kind'], r['n'])}" for r in mine], rotation=60,
                      fontsize=7, ha="right")
        ax.set_yscale("log")
        ax.set_title(model)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("peer ms / streamrt ms (> 1: streamrt faster)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--logs")
    ap.add_argument("--elapsed-s", type=int)
    a = ap.parse_args()
    logs = a.logs or os.path.join(a.outdir, "logs")
    rep = collect(logs)
    env_path = os.path.join(logs, "env.txt")
    env = read(env_path).strip().splitlines() if os.path.exists(env_path) else []
    rep.update(env=env, elapsed_s=a.elapsed_s)
    with open(os.path.join(a.outdir, "hf.json"), "w") as f:
        json.dump(rep, f, indent=1)
    md = markdown(rep, env, a.elapsed_s)
    try:
        if plot(rep["rows"], os.path.join(a.outdir, "hf.png")):
            md += "\n![streamrt's speedup over each peer](hf.png)\n"
    except Exception as e:  # noqa: BLE001 - the tables matter more than the picture
        md += f"\n(no plot: {type(e).__name__}: {e})\n"
    with open(os.path.join(a.outdir, "hf.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
