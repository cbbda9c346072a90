#!/usr/bin/env python3
"""Tables (and a plot) of the compressed-weight benchmark: python3 bench/quant/report.py OUTDIR [--minilm FILE]
reads OUTDIR's JSON lines (bench/quant/run.sh) and writes OUTDIR/quant.md (printed) and OUTDIR/quant.png (when
matplotlib imports).

Decode table, per model, scheme and budget: tokens/s (median of greedy_decode's steps after a 512-position
cache), bytes streamed per token, the bound (pinned host-to-device GB/s measured before that model's points /
bytes per token; "-" when nothing streams), the share of it reached, and the speed-up over fp16 at the same
budget. Then the builds, the accuracy (accuracy.py) and, with --minilm, minilm.py's cosine table; last the
issue's goals, each met or not. Points not measured show their reason ("n/a: deadline", "failed: ...").
"""
import argparse
import json
import os

MODEL_NAMES = {"1b": "Llama-3.2-1B shape", "8b": "Llama-3-8B shape, 14 layers"}
GOAL_SPEEDUP = {"int8": 1.9, "fp8": 1.9, "int4": 3.5}  # fp8: int8's bytes
GOAL_COSINE = {"int8": 0.99, "fp8": 0.99, "int4": 0.98}


def load(path):
    if not path or not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    out.append(dict(error=f"unreadable line: {line[:60]}"))
    return out


def split_label(label):
    parts = (label or "").split("/")
    return tuple(parts) if len(parts) == 3 else (None, None, None)


class Data:
    def __init__(self, out):
        self.decode = {}
        for r in load(os.path.join(out, "decode.jsonl")):
            if r.get("mode", "decode") != "decode":
                continue
            key = split_label(r.get("label"))
            if key[0] and (key not in self.decode or "error" in self.decode[key]):
                self.decode[key] = r  # a measurement wins over an error line for the same point
        self.busy = {r["label"]: r.get("busy", "") for r in load(os.path.join(out, "points.jsonl")) if "label" in r}
        self.bw = {r.get("label"): r for r in load(os.path.join(out, "bandwidth.jsonl"))}
        self.builds = {(r.get("label"), r.get("scheme")): r for r in load(os.path.join(out, "builds.jsonl"))}
        self.accuracy = [r for r in load(os.path.join(out, "accuracy.jsonl"))]
        self.exports = {r.get("model"): r for r in load(os.path.join(out, "exports.jsonl"))}
        order = lambda xs, ref: sorted(set(xs), key=lambda x: ref.index(x) if x in ref else len(ref))  # noqa: E731
        keys = list(self.decode)
        self.models = order([k[0] for k in keys], ["1b", "8b"])
        self.schemes = order([k[1] for k in keys], ["fp16", "int8", "fp8", "int4"])
        self.budgets = order([k[2] for k in keys], ["0", "50%", "100%"])

    def gbps(self, model):
        r = self.bw.get(model, {})
        return r.get("gbps")

    def tps(self, key):
        r = self.decode.get(key)
        return 1000.0 / r["median_ms"] if r and r.get("median_ms") else None

    def bound(self, key):
        r, bw = self.decode.get(key), self.gbps(key[0])
        if not r or not bw or not r.get("bytes_streamed_per_step"):
            return None
        return bw * 1e9 / r["bytes_streamed_per_step"]


def fmt(x, spec, none="-"):
    return none if x is None else format(x, spec)


def model_name(d, m):
    return f"{MODEL_NAMES.get(m, m)}{' (tiny)' if d.exports.get(m, {}).get('tiny') else ''}"


def model_title(d, m):
    e = d.exports.get(m, {})
    return model_name(d, m) + (f", {e['weight_bytes'] / 1e9:.2f} GB fp16" if e.get("weight_bytes") else "")


def decode_table(d):
    lines = ["| model | scheme | budget | resident GiB | tok/s | streamed / token | bound tok/s | of bound | x fp16 |",
             "|---|---|---|---|---|---|---|---|---|"]
    flagged = False
    for m in d.models:
        for b in d.budgets:
            for s in d.schemes:
                key = (m, s, b)
                r = d.decode.get(key)
                if r is None:
                    continue
                name = model_name(d, m)
                if "error" in r:
                    lines.append(f"| {name} | {s} | {b} | | {r['error'][:60]} | | | | |")
                    continue
                tps, bound, ref = d.tps(key), d.bound(key), d.tps((m, "fp16", b))
                mark = ""
                if d.busy.get("/".join(key)):
                    mark, flagged = " †", True
                streamed = r.get("bytes_streamed_per_step", 0)
                lines.append("| " + " | ".join([
                    name, s, b, f"{r.get('budget_bytes', 0) / (1 << 30):.2f}", f"**{tps:.2f}**{mark}",
                    f"{streamed / 1e9:.3f} GB" if streamed else "0",
                    fmt(bound, ".2f"), f"{100 * tps / bound:.0f} %" if bound else "-",
                    f"{tps / ref:.2f}x" if ref and s != "fp16" else "-"]) + " |")
    bws = [f"{m}: {d.gbps(m):.1f} GB/s" + (" †" if d.busy.get(f"bandwidth/{m}") else "")
           for m in d.models if d.gbps(m)]
    lines.append("")
    lines.append("Pinned host-to-device bandwidth (1 GiB copies, before each model's points): " +
                 (", ".join(bws) if bws else "not measured"))
    if flagged or any(d.busy.get(f"bandwidth/{m}") for m in d.models):
        lines.append("† measured while an export was still running on the CPU")
    return lines


def table(head, records, lead, cells):
    """Markdown: per record the lead(r) cells, then cells(r), or the record's error in their place."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        first = lead(r)
        rest = [r["error"][:70]] + [""] * (len(head) - len(first) - 1) if "error" in r else cells(r)
        lines.append("| " + " | ".join(first + rest) + " |")
    return lines


def build_table(d):
    rows = list(d.builds.values())
    return table(["model", "scheme", "plan GB", "streamable GB", "MatMuls compressed", "build s"], rows,
                 lambda r: [model_name(d, r.get("label")), str(r.get("scheme"))],
                 lambda r: [fmt(r.get("plan_bytes", 0) / 1e9, ".3f"),
                            fmt(r["streamable_bytes"] / 1e9 if "streamable_bytes" in r else None, ".3f"),
                            str(r.get("steps_quantized", "-" if r.get("scheme") == "fp16" else "?")),
                            "cached" if r.get("cached") else fmt(r.get("build_s"), ".1f")]) if rows else []


def accuracy_table(d):
    return table(["model", "scheme", "steps", "logits max abs err", "mean abs err", "fp16 max abs logit",
                  "top-1 agreement"], d.accuracy,
                 lambda r: [model_name(d, r.get("label")), str(r.get("scheme"))],
                 lambda r: [str(r["steps"]), f"{r['max_abs_err']:.4g}", f"{r['mean_abs_err']:.3g}",
                            f"{r['logits_absmax']:.3g}", f"{100 * r['top1_agree']:.1f} %"]) if d.accuracy else []


def minilm_table(rows):
    return table(["scheme", "plan MB", "MatMuls compressed", "cosine to PyTorch fp32: mean", "min", "max abs diff",
                  "PyTorch, same rounding: mean", "min"],
                 rows, lambda r: [str(r.get("scheme"))],
                 lambda r: [f"{r['plan_bytes'] / 1e6:.1f}", str(r.get("steps_quantized", "-")), f"{r['cos_mean']:.5f}",
                            f"{r['cos_min']:.5f}", f"{r['max_abs_diff']:.3g}", fmt(r.get("sim_cos_mean"), ".5f"),
                            fmt(r.get("sim_cos_min"), ".5f")]) if rows else []


def goals(d, minilm):
    out = []
    for m in d.models:
        ref = d.tps((m, "fp16", "0"))
        for s, want in GOAL_SPEEDUP.items():
            t, bound = d.tps((m, s, "0")), d.bound((m, s, "0"))
            if t is None or ref is None:
                out.append(f"- {m}, budget 0, {s}: not measured")
                continue
            x, share = t / ref, (t / bound if bound else None)
            ok = x >= want and share is not None and share >= 0.9
            out.append(f"- {m}, budget 0, {s}: {x:.2f}x fp16 (goal {want}x), {fmt(share and 100 * share, '.0f')} % of "
                       f"its bound (goal 90 %): **{'met' if ok else 'not met'}**")
        f16, i4 = d.tps((m, "fp16", "100%")), d.tps((m, "int4", "100%"))
        if f16 and i4:
            out.append(f"- {m}, resident: int4 {i4:.1f} tok/s vs fp16 {f16:.1f} ({i4 / f16:.2f}x): "
                       f"**{'met' if i4 > f16 else 'not met'}**")
    for r in minilm:
        base = r.get("scheme", "").split("+")[0].split(":")[0]
        if base in GOAL_COSINE and "cos_mean" in r:
            want = GOAL_COSINE[base]
            verdict = lambda ok: "met" if ok else "not met"  # noqa: E731
            out.append(f"- MiniLM {r['scheme']}: cosine mean {r['cos_mean']:.4f} (>= {want}: "
                       f"**{verdict(r['cos_mean'] >= want)}**), every sentence: min {r['cos_min']:.4f} "
                       f"(**{verdict(r['cos_min'] >= want)}**)")
    return out


def plot(d, path):
    if not d.models:
        return False
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, max(1, len(d.models)), figsize=(6 * max(1, len(d.models)), 4), squeeze=False)
    width = 0.8 / max(1, len(d.schemes))
    for ax, m in zip(axes[0], d.models):
        for i, s in enumerate(d.schemes):
            xs = [j + (i - (len(d.schemes) - 1) / 2) * width for j in range(len(d.budgets))]
            ys = [d.tps((m, s, b)) or 0 for b in d.budgets]
            ax.bar(xs, ys, width, label=s)
            bounds = [d.bound((m, s, b)) for b in d.budgets]
            bx = [x for x, y in zip(xs, bounds) if y]
            if bx:
                ax.plot(bx, [y for y in bounds if y], "k_", markersize=14 * width / 0.27,
                        label="bound" if i == 0 else None)
            for x, y, key in zip(xs, ys, [(m, s, b) for b in d.budgets]):
                if not y and key in d.decode:
                    ax.text(x, 0, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
        ax.set_xticks(range(len(d.budgets)), [f"budget {b}" for b in d.budgets])
        past = next((r["past"] for k, r in d.decode.items() if k[0] == m and "past" in r), "?")
        ax.set_ylabel(f"decode tokens / s (past {past})")
        ax.set_title(model_title(d, m))
        ax.set_yscale("log")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--minilm", help="minilm.py's JSON lines")
    a = ap.parse_args()
    d = Data(a.outdir)
    minilm = load(a.minilm)
    pasts = sorted({r["past"] for r in d.decode.values() if "past" in r})
    lines = [f"### Decode after a {'/'.join(map(str, pasts)) or '?'}-position cache", ""] + decode_table(d)
    for title, table in (("Builds", build_table(d)), ("Logits against the fp16 engine (teacher-forced decode)",
                                                      accuracy_table(d)),
                         ("all-MiniLM-L6-v2 sentence embeddings (trained weights, CPU)", minilm_table(minilm))):
        if table:
            lines += ["", f"### {title}", ""] + table
    g = goals(d, minilm)
    if g:
        lines += ["", "### Goals", ""] + g
    if plot(d, os.path.join(a.outdir, "quant.png")):
        lines += ["", "![decode tokens/s per scheme and budget](quant.png)"]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.outdir, "quant.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
