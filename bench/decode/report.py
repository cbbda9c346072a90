#!/usr/bin/env python3
"""Tables (and a plot) of the decode benchmark: python3 bench/decode/report.py OUTDIR
reads OUTDIR/streamrt.jsonl, OUTDIR/streamrt-inplace.jsonl (BENCH_KV_IN_PLACE=1: rows "<point>-inplace", set
beside the same point's PyTorch peers) and OUTDIR/torch.jsonl (bench/decode/run.sh), writes OUTDIR/decode.md
(printed) and OUTDIR/decode.png (when matplotlib is there).

Per free-memory point: streamrt's budget, bytes streamed per token, decode tokens/s at each past length and
the bound (pinned host-to-device GB/s of the same run / bytes streamed per token, "-" when nothing streams),
the 2048-token prefill; the PyTorch prefetch loop and accelerate at the same point; streamrt's speed-up over
accelerate. Errors (e.g. out of memory) are shown as such."""
import json
import os
import sys


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def gib(b):
    return f"{b / (1 << 30):.2f}"


def main():
    out = sys.argv[1]
    s_rows = load(os.path.join(out, "streamrt.jsonl")) + load(os.path.join(out, "streamrt-inplace.jsonl"))
    t_rows = load(os.path.join(out, "torch.jsonl"))
    bw = next((r["gbps"] for r in t_rows if r.get("impl") == "h2d_bandwidth" and "gbps" in r), None)
    points = []
    for r in s_rows + t_rows:
        p = r.get("label", r.get("free"))
        if p and p not in points and p + "-inplace" not in points:  # peers join their in-place point
            points.append(p)
    pasts = sorted({r["past"] for r in s_rows + t_rows if r.get("mode") == "decode" and "past" in r})

    def find(rows, impl, point, mode, past=None):
        if rows is t_rows:  # the peers of an in-place row are those of its point
            point = point.removesuffix("-inplace")
        for r in rows:
            if r.get("impl") == impl and r.get("label", r.get("free")) == point and r.get("mode") == mode and \
                    (past is None or r.get("past") == past):
                return r
        return None

    def tps(r):
        if r is None:
            return "-"
        if "error" in r:
            return r["error"][:40]
        return f"{1000.0 / r['median_ms']:.2f}"

    lines = [f"pinned host-to-device bandwidth: {bw} GB/s" if bw else "pinned bandwidth: not measured", ""]
    head = ["free", "budget GiB", "streamed / token GB"]
    for p in pasts:
        head += [f"streamrt tok/s @{p}", f"bound @{p}", "% of bound", f"prefetch tok/s @{p}", f"accelerate tok/s @{p}",
                 "x accelerate"]
    head += ["prefill ms: streamrt", "prefetch", "accelerate"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    plot = {}
    for point in points:
        row = [point]
        anyr = next((r for r in s_rows if r.get("label") == point and "budget_bytes" in r), None)
        row.append(gib(anyr["budget_bytes"]) if anyr else "-")
        first = next((find(s_rows, "streamrt", point, "decode", p) for p in pasts if find(s_rows, "streamrt", point, "decode", p)), None)
        row.append(f"{first['bytes_streamed_per_step'] / 1e9:.3f}" if first else "-")
        for p in pasts:
            s = find(s_rows, "streamrt", point, "decode", p)
            tp = find(t_rows, "torch_prefetch", point, "decode", p)
            ac = find(t_rows, "accelerate_cpu_offload", point, "decode", p)
            bound = None
            if s and bw and s.get("bytes_streamed_per_step"):
                bound = bw * 1e9 / s["bytes_streamed_per_step"]
            row += [tps(s), f"{bound:.2f}" if bound else "-",
                    f"{100.0 * (1000.0 / s['median_ms']) / bound:.0f} %" if (s and bound and "median_ms" in s) else "-",
                    tps(tp), tps(ac),
                    f"{ac['median_ms'] / s['median_ms']:.1f}x" if (s and ac and "median_ms" in s and "median_ms" in ac) else "-"]
            for name, r in (("streamrt", s), ("PyTorch prefetch loop", tp), ("accelerate cpu_offload", ac)):
                if r and "median_ms" in r:
                    plot.setdefault((name, p), []).append((point, 1000.0 / r["median_ms"]))
            if bound:
                plot.setdefault(("bound", p), []).append((point, bound))
        for impl in ("streamrt", "torch_prefetch", "accelerate_cpu_offload"):
            r = find(s_rows if impl == "streamrt" else t_rows, impl, point, "prefill")
            row.append("-" if r is None else (r["error"][:40] if "error" in r else f"{r['median_ms']:.0f}"))
        lines.append("| " + " | ".join(row) + " |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "decode.md"), "w") as f:
        f.write(text)
    print(text)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, max(1, len(pasts)), figsize=(6 * max(1, len(pasts)), 4), squeeze=False)
    for ax, p in zip(axes[0], pasts):
        for (name, pp), pts in sorted(plot.items()):
            if pp != p:
                continue
            xs = [points.index(x) for x, _ in pts]
            ax.plot(xs, [y for _, y in pts], "--" if name == "bound" else "-o", label=name)
        ax.set_xticks(range(len(points)), points)
        ax.set_xlabel("free device memory")
        ax.set_ylabel("decode tokens / s")
        ax.set_title(f"decode at past {p}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "decode.png"), dpi=100)


if __name__ == "__main__":
    main()
