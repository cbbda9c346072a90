#!/usr/bin/env python3
"""The weight-streaming benchmark's report: RESULTS_DIR/streaming.md (tables and goals),
RESULTS_DIR/streaming.json (the rows) and RESULTS_DIR/streaming.png (when matplotlib imports).

    python3 bench/streaming/report.py RESULTS_DIR [--elapsed-s N]

Reads the JSON lines of every RESULTS_DIR/*.jsonl: streamrt_stream_bench's ({"impl": "streamrt", "seq",
"budget_pct", "budget_bytes", "streamable_bytes", "median_ms", "stall_ms", ...}; "cuda_graph": true makes
it the "streamrt + CUDA graph" series) and torch_peer.py's (h2d_bandwidth, torch_resident, torch_prefetch,
accelerate_cpu_offload). Lines with "median_ms": null carry an "error". Also, when present (bench/streaming/
run.sh writes them): the steps' <name>.log / .rc / .skip (bench/report.py's convention) to explain missing
results (stream_bench.log has streamrt_stream_bench's per-point errors "seq S budget B%: ..."),
export.json, env.txt and config.json.

Per (seq, budget):
  bound = max(streamrt's latency at budget 100 % (resident), non-resident bytes / pinned H2D bandwidth)
  with non-resident bytes = streamable_bytes - budget_bytes (streamrt's numbers) and the bandwidth
  measured by torch_peer.py (median of 1 GiB pinned copies). Goals (issue 4):
  1. streamrt within 5 % of the bound at every budget (streamrt / bound <= 1.05);
  2. never slower than the PyTorch prefetch loop at the same budget (streamrt <= torch prefetch);
  3. at least 1.5x faster than accelerate's cpu_offload wherever compute is not negligible, defined as
     the resident latency being at least 10 % of the bound (elsewhere the ratio is shown, not judged).
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import report as bench_report  # noqa: E402  (bench/report.py: step logs, cell escaping, build log parsing)

WITHIN_BOUND = 1.05
ACCEL_SPEEDUP = 1.5
NOT_NEGLIGIBLE = 0.10  # resident latency / bound at or above which compute counts
POINT_ERROR_RE = re.compile(r"^seq (\d+) budget (\d+)%: (.+)$", re.M)  # streamrt_stream_bench's stderr
STREAMABLE_RE = re.compile(r"weight streaming: (\d+) weights streamable, ([\d.]+) MiB")
# Steps of bench/streaming/run.sh whose failure explains a missing result, per implementation.
STEPS = {"streamrt": ("export", "build", "stream_bench"), "streamrt_graph": ("export", "build", "stream_bench_graph"),
         "torch": ("torch_peer",)}


def read_jsonl(results):
    recs = []
    for path in sorted(glob.glob(os.path.join(results, "*.jsonl"))):
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("impl") == "streamrt" and rec.get("cuda_graph"):
                    rec["impl"] = "streamrt_graph"
                recs.append(rec)
    return recs


def ok(rec):
    return rec is not None and rec.get("median_ms") is not None


class Results:
    """The measurements by (impl, seq, budget) and the reasons for missing ones."""

    def __init__(self, results):
        self.dir = results
        self.recs = read_jsonl(results)
        self.by_key = {}
        for r in self.recs:  # a later line for the same point wins (e.g. a re-run appended)
            self.by_key[(r.get("impl"), r.get("seq"), r.get("budget_pct"))] = r
        self.bandwidth = self.find("h2d_bandwidth")
        self.pageable = self.find("h2d_bandwidth_pageable")
        self.point_errors = {}
        for name, impl in (("stream_bench", "streamrt"), ("stream_bench_graph", "streamrt_graph")):
            path = os.path.join(results, name + ".log")
            if os.path.exists(path):
                for seq, pct, msg in POINT_ERROR_RE.findall(bench_report.read(path)):
                    self.point_errors[(impl, int(seq), int(pct))] = f"failed: {msg.strip()}"

    def find(self, impl, seq=None, budget=None):
        return self.by_key.get((impl, seq, budget))

    def step_error(self, impl):
        """Why an implementation has no result: the first step of its chain that did not succeed."""
        for name in STEPS["torch" if impl.startswith("torch") or impl.startswith("accelerate") else impl]:
            if any(os.path.exists(os.path.join(self.dir, name + ext)) for ext in (".rc", ".skip")):
                step = bench_report.Step(self.dir, name)
                if not step.ok:
                    return f"{killed_early(self.dir, name) or step.error} ({name})"
        return None

    def cell(self, impl, seq, budget=None):
        """A measurement record, or {"error": why} when there is none."""
        rec = self.find(impl, seq, budget)
        if ok(rec):
            return rec
        if rec is not None:
            return {"error": rec.get("error") or "failed: no latency"}
        why = self.point_errors.get((impl, seq, budget)) or self.step_error(impl) or "missing"
        return {"error": why}

    def seqs(self):
        return sorted({r["seq"] for r in self.recs if isinstance(r.get("seq"), int)})

    def budgets(self, seq):
        found = {r["budget_pct"] for r in self.recs if r.get("seq") == seq and isinstance(r.get("budget_pct"), int)
                 and r.get("impl") in ("streamrt", "torch_prefetch", "streamrt_graph")}
        return sorted(found) or list(range(0, 101, 10))

    def streamable_bytes(self):
        for impl in ("streamrt", "streamrt_graph", "torch_prefetch"):
            for r in self.recs:
                if r.get("impl") == impl and r.get("streamable_bytes"):
                    return r["streamable_bytes"], impl
        return None, None


def killed_early(results, name):
    """bench/report.py's Step reads 124 / 137 as a timeout; a 137 well before the timeout is a kill (e.g. a
    crash or the out-of-memory killer)."""
    try:
        status, timeout_s, wall_ms = bench_report.read(os.path.join(results, name + ".rc")).split()[:3]
        if int(status) == 137 and float(wall_ms) < (float(timeout_s) - 5) * 1e3:
            return f"failed: killed (exit status 137) after {float(wall_ms) / 1e3:.0f}s"
    except (OSError, ValueError):
        pass
    return None


def ratio(a, b):
    return a / b if a is not None and b else None


def rows_for(res, seq):
    bw = res.bandwidth.get("gbps") if ok_bw(res.bandwidth) else None
    streamable, source = res.streamable_bytes()
    resident = res.cell("streamrt", seq, 100)
    resident_ms = resident.get("median_ms")
    accel = res.cell("accelerate_cpu_offload", seq, None)
    rows = []
    for pct in res.budgets(seq):
        s = res.cell("streamrt", seq, pct)
        g = res.cell("streamrt_graph", seq, pct)
        p = res.cell("torch_prefetch", seq, pct)
        budget_bytes = s.get("budget_bytes", streamable * pct // 100 if streamable else None)
        if s.get("streamable_bytes"):
            streamable_pt = s["streamable_bytes"]
        else:
            streamable_pt = streamable
        nonres = max(0, streamable_pt - budget_bytes) if streamable_pt is not None and budget_bytes is not None else None
        transfer_ms = nonres / (bw * 1e6) if nonres is not None and bw else None
        bound = max(resident_ms, transfer_ms) if resident_ms is not None and transfer_ms is not None else None
        s_ms, p_ms, a_ms = s.get("median_ms"), p.get("median_ms"), accel.get("median_ms")
        r = dict(seq=seq, budget_pct=pct, budget_bytes=budget_bytes, non_resident_bytes=nonres,
                 streamrt_ms=s_ms, streamrt_error=s.get("error"), stall_ms=s.get("stall_ms"),
                 bytes_streamed=s.get("bytes_streamed"), streamrt_graph_ms=g.get("median_ms"),
                 streamrt_graph_error=g.get("error"), bound_ms=bound, transfer_ms=transfer_ms,
                 resident_ms=resident_ms, torch_prefetch_ms=p_ms, torch_prefetch_error=p.get("error"),
                 torch_prefetch_check=p.get("check"), accelerate_ms=a_ms, accelerate_error=accel.get("error"),
                 streamable_source=source if not s.get("streamable_bytes") else "streamrt")
        r["vs_bound"] = ratio(s_ms, bound)
        r["speedup_vs_prefetch"] = ratio(p_ms, s_ms)
        r["speedup_vs_accelerate"] = ratio(a_ms, s_ms)
        r["compute_not_negligible"] = (resident_ms >= NOT_NEGLIGIBLE * bound) if bound else None
        r["goal_bound"] = None if r["vs_bound"] is None else r["vs_bound"] <= WITHIN_BOUND
        r["goal_prefetch"] = None if r["speedup_vs_prefetch"] is None else s_ms <= p_ms
        if r["compute_not_negligible"] is False:
            r["goal_accelerate"] = "n/a"
        else:
            r["goal_accelerate"] = (None if r["speedup_vs_accelerate"] is None or r["compute_not_negligible"] is None
                                    else r["speedup_vs_accelerate"] >= ACCEL_SPEEDUP)
        rows.append(r)
    return rows


def ok_bw(rec):
    return rec is not None and rec.get("gbps")


# --------------------------------------------------------------------------------------- markdown

def ms(v, err=None):
    if v is None:
        return bench_report.md_escape(err or "n/a", 90)
    return f"{v:.2f}" if v >= 10 else f"{v:.3f}"


def gb(nbytes):
    if nbytes is None:
        return "-"
    return f"{nbytes / 1e9:.2f} GB" if nbytes >= 1e8 or nbytes == 0 else f"{nbytes / 1e6:.3f} MB"


def times(v):
    return "-" if v is None else f"{v:.2f}x"


def mark(v):
    return {True: "yes", False: "**no**", "n/a": "n/a"}.get(v, "?")


def goal_summary(rows, key, what, value):
    judged = [r for r in rows if r[key] in (True, False)]
    missing = [r for r in rows if r[key] is None]
    misses = [r for r in judged if r[key] is False]
    if not judged:
        return f"- {what}: **not measured**"
    def where(rs, value=None):  # "seq 1: 0 % (1.20x), 10 %; seq 2048: 30 %"
        seqs = {}
        for r in rs:
            v = f" ({times(r[value])})" if value and r[value] is not None else ""
            seqs.setdefault(r["seq"], []).append(f"{r['budget_pct']} %{v}")
        return "; ".join(f"seq {s}: {', '.join(v)}" for s, v in seqs.items())
    text = f"- {what}: " + ("**holds**" if not misses else "**fails**")
    text += f" (met at {len(judged) - len(misses)} of {len(judged)} judged points)"
    if misses:
        text += f"; missed at {where(misses, value)}"
    if missing:
        text += f"; not measured at {where(missing)}"
    na = [r for r in rows if r[key] == "n/a"]
    if na:
        text += f"; {len(na)} points where compute is negligible are not judged"
    return text + "."


def load_json(path):
    """A small JSON file written by run.sh ({} when missing or unreadable)."""
    try:
        return json.loads(bench_report.read(path))
    except (OSError, ValueError):
        return {}


def header(res, elapsed_s):
    out = ["# Weight streaming: streamrt vs PyTorch prefetch vs accelerate", ""]
    env_path = os.path.join(res.dir, "env.txt")
    if os.path.exists(env_path):
        out += [f"    {line}" for line in bench_report.read(env_path).strip().splitlines()] + [""]
    exp = load_json(os.path.join(res.dir, "export.json"))
    cfg = exp.get("config")
    if cfg:
        out.append(f"Model: bench/models.py's LlamaStack, {cfg['layers']} layers, hidden {cfg['hidden']}, {cfg['heads']} "
                   f"heads, MLP {cfg['intermediate']}, {exp.get('dtype', 'float16')} random weights (seed "
                   f"{exp.get('seed', 0)}): {gb(exp.get('weight_bytes', 0))} of initializers, "
                   f"{gb(exp.get('matmul_weight_bytes', 0))} of MatMul weights; hidden states [1, seq, "
                   f"{cfg['hidden']}] in and out, no KV cache; one ONNX export (opset 17, dynamic seq, external "
                   f"data) serves every seq.")
    streamable, source = res.streamable_bytes()
    if streamable:
        out.append(f"Streamable weights: {gb(streamable)} ({'streamrt' if source.startswith('streamrt') else 'PyTorch linears: no streamrt result'}).")
    build = bench_report.Step(res.dir, "build")
    if build.ok and build.text:
        b = bench_report.parse_build(build)
        m = STREAMABLE_RE.search(build.text)
        out.append(f"streamrt build: {b.get('build_s', 0):.1f} s" + (f", {m.group(1)} weights streamable ({float(m.group(2)):.1f} MiB)" if m else "") + ".")
    if ok_bw(res.bandwidth):
        bw = res.bandwidth
        text = f"Pinned host-to-device bandwidth: {bw['gbps']:.2f} GB/s (median of {bw.get('n', '?')} copies of {bw.get('bytes', 0) / 2**30:.2f} GiB; best {bw.get('max_gbps', 0):.2f})"
        if ok_bw(res.pageable):
            text += f"; pageable: {res.pageable['gbps']:.2f} GB/s"
        out.append(text + (" — measured on the CPU (no GPU): host memcpy" if bw.get("device") == "cpu" else "") + ".")
    else:
        why = (res.bandwidth or {}).get("error") or res.step_error("torch_peer") or "missing"
        out.append(f"Pinned host-to-device bandwidth: {bench_report.md_escape(why)} — no bound without it.")
    cfgrun = load_json(os.path.join(res.dir, "config.json"))
    out += ["", "Latency: median of one forward at a time, wall time between device synchronizations"
            + (f", {cfgrun['iters']} timed runs after {cfgrun['warmup']} warmup" if "iters" in cfgrun else "")
            + " (accelerate: fewer, in a time box). Budget: percent of the streamable weights kept on the device.",
            f"Bound = max(streamrt resident latency (budget 100 %), non-resident bytes / pinned bandwidth). "
            f"Compute counts as not negligible where the resident latency is at least {NOT_NEGLIGIBLE:.0%} of the "
            f"bound; only there is the accelerate goal judged. torch prefetch: the first nn.Linear weights in "
            f"execution order up to the budget stay on the device, the others stream from pinned memory on a side "
            f"stream through a ring of 3 buffers, prefetch depth 2. accelerate: cpu_offload (pageable copies), "
            f"budget-independent."]
    out.append("Goal columns: yes / **no**; n/a: not judged (negligible compute); ?: not measured.")
    steps = step_times(res.dir)
    if elapsed_s is not None:
        out.append(f"Total run time {elapsed_s:.0f} s" + (f" ({steps})." if steps else "."))
    elif steps:
        out.append(f"Steps: {steps}.")
    return out


def step_times(results):
    """"export 95 s, build 41 s (failed), ..." from run.sh's <step>.rc / .skip files."""
    parts = []
    for name in ("export", "build", "stream_bench", "stream_bench_graph", "torch_peer"):
        if os.path.exists(os.path.join(results, name + ".skip")):
            parts.append(f"{name} skipped")
            continue
        try:
            status, _, wall_ms = bench_report.read(os.path.join(results, name + ".rc")).split()[:3]
        except (OSError, ValueError):
            continue
        parts.append(f"{name} {float(wall_ms) / 1e3:.0f} s" + ("" if status == "0" else f" (exit status {status})"))
    return ", ".join(parts)


def table(rows):
    has_graph = any(r["streamrt_graph_ms"] is not None for r in rows)
    cols = ["budget %", "non-resident", "streamrt ms", "stall ms"] + (["streamrt graph ms"] if has_graph else []) + \
        ["bound ms", "streamrt / bound", "torch prefetch ms", "vs prefetch", "accelerate ms", "vs accelerate",
         f"<= {WITHIN_BOUND:.2f} bound", "<= prefetch", f">= {ACCEL_SPEEDUP}x accelerate"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        nonres = gb(r["non_resident_bytes"])
        stall = "-" if r["stall_ms"] is None else f"{r['stall_ms']:.2f}"
        pf = ms(r["torch_prefetch_ms"], r["torch_prefetch_error"])
        if r["torch_prefetch_check"] not in (None, "exact", "n/a"):
            pf += f" ({r['torch_prefetch_check']})"
        cells = [str(r["budget_pct"]), nonres, ms(r["streamrt_ms"], r["streamrt_error"]), stall]
        if has_graph:
            cells.append(ms(r["streamrt_graph_ms"], r["streamrt_graph_error"]))
        cells += [ms(r["bound_ms"]), times(r["vs_bound"]), pf, times(r["speedup_vs_prefetch"]),
                  ms(r["accelerate_ms"], r["accelerate_error"]), times(r["speedup_vs_accelerate"]),
                  mark(r["goal_bound"]), mark(r["goal_prefetch"]), mark(r["goal_accelerate"])]
        out.append("| " + " | ".join(cells) + " |")
    return out


def markdown(res, by_seq, elapsed_s):
    out = header(res, elapsed_s)
    all_rows = [r for rows in by_seq.values() for r in rows]
    out += ["", "## Goals", "",
            goal_summary(all_rows, "goal_bound", f"within {WITHIN_BOUND - 1:.0%} of the bound at every budget", "vs_bound"),
            goal_summary(all_rows, "goal_prefetch", "never slower than the PyTorch prefetch loop", "speedup_vs_prefetch"),
            goal_summary(all_rows, "goal_accelerate",
                         f"at least {ACCEL_SPEEDUP}x faster than accelerate's cpu_offload where compute is not negligible",
                         "speedup_vs_accelerate")]
    for seq, rows in by_seq.items():
        res_ms = rows[0]["resident_ms"] if rows else None
        torch_res = res.cell("torch_resident", seq, 100)
        out += ["", f"## seq {seq}", "",
                f"Resident (budget 100 %): streamrt {ms(res_ms, res.cell('streamrt', seq, 100).get('error'))} ms, "
                f"PyTorch {ms(torch_res.get('median_ms'), torch_res.get('error'))} ms.", ""]
        out += table(rows)
        bad = [r for r in rows if r["torch_prefetch_check"] not in (None, "exact", "n/a")]
        if bad:
            out += ["", "PyTorch prefetch output differs from the resident output at budgets "
                    + ", ".join(f"{r['budget_pct']} % ({r['torch_prefetch_check']})" for r in bad) + "."]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------- plot

def plot(by_seq, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001 - no matplotlib: no picture
        return f"no plot: matplotlib does not import ({type(e).__name__})"
    seqs = list(by_seq)
    if not seqs:
        return "no plot: no results"
    fig, axes = plt.subplots(1, len(seqs), figsize=(6 * len(seqs), 4.5), squeeze=False)
    for ax, seq in zip(axes[0], seqs):
        rows = by_seq[seq]
        x = [r["budget_pct"] for r in rows]
        series = [("streamrt_ms", "streamrt", dict(marker="o", lw=2)),
                  ("streamrt_graph_ms", "streamrt + CUDA graph", dict(marker=".", lw=1)),
                  ("bound_ms", "bound", dict(ls="--", color="black")),
                  ("torch_prefetch_ms", "PyTorch prefetch loop", dict(marker="s"))]
        for key, label, style in series:
            pts = [(xi, r[key]) for xi, r in zip(x, rows) if r[key] is not None]
            if pts:
                ax.plot(*zip(*pts), label=label, **style)
        accel = next((r["accelerate_ms"] for r in rows if r["accelerate_ms"] is not None), None)
        if accel is not None:
            ax.axhline(accel, color="tab:red", ls=":", label=f"accelerate cpu_offload ({accel:.0f} ms)")
        ax.set_yscale("log")
        ax.set_xlabel("weight-streaming budget (% of streamable weights on the device)")
        ax.set_ylabel("latency (ms, log scale)")
        ax.set_title(f"seq {seq}" + (" (decode-like)" if seq == 1 else " (prefill)"))
        ax.set_xticks(range(0, 101, 10))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--elapsed-s", type=float)
    args = ap.parse_args()
    res = Results(args.results)
    by_seq = {seq: rows_for(res, seq) for seq in res.seqs()}
    md = markdown(res, by_seq, args.elapsed_s)
    png = os.path.join(args.results, "streaming.png")
    why_no_plot = plot(by_seq, png)
    if why_no_plot:
        md += f"\n({why_no_plot}.)\n"
    with open(os.path.join(args.results, "streaming.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.results, "streaming.json"), "w") as f:
        json.dump({"bandwidth": res.bandwidth, "pageable_bandwidth": res.pageable, "rows": by_seq}, f, indent=1)
    print(md)
    print(f"wrote {args.results}/streaming.md, streaming.json" + (", streaming.png" if not why_no_plot else ""))


if __name__ == "__main__":
    main()
