#!/usr/bin/env python3
"""Where one kernel's warps spend their time, instruction by instruction, from an Nsight Compute report.

    ncu --set full --kernel-name regex:NAME --launch-count 1 -o REP <command>        (on the GPU machine)
    ncu -i REP.ncu-rep --page source --csv --print-source sass > SASS.csv
    python3 bench/tools/ncu_sass.py SASS.csv [--top 30] [--region NAME:LO:HI ...] [--hot N]
    python3 bench/tools/ncu_sass.py --selftest

Prints (markdown) the opcode mix: each opcode's share of the executed instructions beside its share of the
warp-state samples (time), the instructions with the most samples and their two main stall reasons, and for
each --region (an address range in hex, the low 20 bits of the addresses ncu prints, e.g. softmax:ae600:afc40)
its samples and stall reasons. --hot N lists, in address order, every instruction executed at least N times
(the kernel's loop) with its samples: how the attention kernel's copies of S were found (docs/benchmarks.md,
eleventh session). bench/attention/profile.sh writes SASS.csv for one attention case.
"""
import argparse
import collections
import csv
import io
import re
import sys


def load(text):
    """The instruction rows of ncu's source-page CSV: dicts with address, source, executed, samples, reasons."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"Address"')), None)
    if start is None:
        raise SystemExit("error: no SASS table in the input (expected ncu --page source --csv --print-source sass)")
    rows = []
    for r in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if not r.get("Address"):
            continue
        num = lambda k: int((r.get(k) or "0").replace(",", "") or 0)
        reasons = {k[len("stall_"):]: num(k) for k in r if k and k.startswith("stall_") and "Not Issued" not in k}
        rows.append({"address": int(r["Address"], 16) & 0xFFFFF, "source": r["Source"].strip(),
                     "executed": num("Instructions Executed"),
                     "samples": num("Warp Stall Sampling (All Samples)"), "reasons": reasons})
    if not rows:
        raise SystemExit("error: the SASS table has no instructions")
    return rows


def opcode(source):
    return re.sub(r"^@!?U?P\w+\s+", "", source).split(" ")[0]


def top_reasons(counter, n=2):
    total = sum(counter.values()) or 1
    return ", ".join(f"{k} {v * 100 / total:.0f} %" for k, v in counter.most_common(n) if v)


def report(rows, top, regions, hot):
    executed = sum(r["executed"] for r in rows) or 1
    samples = sum(r["samples"] for r in rows) or 1
    by_op_ex, by_op_s, reasons = collections.Counter(), collections.Counter(), collections.Counter()
    for r in rows:
        by_op_ex[opcode(r["source"])] += r["executed"]
        by_op_s[opcode(r["source"])] += r["samples"]
        reasons.update(r["reasons"])
    out = [f"{executed} instructions executed (warp level), {samples} samples; stalls: {top_reasons(reasons, 6)}", "",
           "| opcode | executed | samples |", "|---|---|---|"]
    for op, n in by_op_ex.most_common(top):
        out.append(f"| {op} | {n * 100 / executed:.1f} % | {by_op_s[op] * 100 / samples:.1f} % |")
    out += ["", "| address | executed | samples | stalls | instruction |", "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: -r["samples"])[:top]:
        out.append(f"| {r['address']:05x} | {r['executed']} | {r['samples']} | "
                   f"{top_reasons(collections.Counter(r['reasons']))} | `{r['source'][:70]}` |")
    if regions:
        out += ["", "| region | instructions | executed | samples | stalls |", "|---|---|---|---|---|"]
        for spec in regions:
            name, lo, hi = spec.split(":")
            inside = [r for r in rows if int(lo, 16) <= r["address"] < int(hi, 16)]
            c = collections.Counter()
            for r in inside:
                c.update(r["reasons"])
            out.append(f"| {name} | {len(inside)} | {sum(r['executed'] for r in inside)} | "
                       f"{sum(r['samples'] for r in inside) * 100 / samples:.1f} % | {top_reasons(c, 3)} |")
    if hot:
        out += ["", f"Instructions executed at least {hot} times, in address order:", ""]
        for r in sorted((r for r in rows if r["executed"] >= hot), key=lambda r: r["address"]):
            out.append(f"    {r['address']:05x} {r['executed']:10d} {r['samples']:7d}  {r['source'][:80]}")
    return "\n".join(out) + "\n"


SELFTEST = '''"Kernel Name","k",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_wait","stall_barrier","stall_wait (Not Issued)"
"0x7f0000a8160","WARPGROUP.DEPBAR.LE gsb0, 0x0","90","100","0","88","0"
"0x7f0000a8360","IMAD.MOV.U32 R148, RZ, RZ, R87","10","1000","6","0","0"
"0x7f0000a8370","@!P0 IMAD.MOV.U32 R145, RZ, RZ, R86","5","1000","4","0","0"
"0x7f0000ae600","FMNMX R14, R161, R162, !PT","20","2000","15","0","0"
'''


def selftest():
    rows = load(SELFTEST)
    assert [r["address"] for r in rows] == [0xa8160, 0xa8360, 0xa8370, 0xae600], rows
    assert opcode(rows[2]["source"]) == "IMAD.MOV.U32"
    text = report(rows, 10, ["moves:a8300:a8400"], 1000)
    assert "| IMAD.MOV.U32 | 48.8 % | 12.0 % |" in text, text
    assert "| moves | 2 | 2000 | 12.0 % | wait 100 % |" in text, text
    assert "| a8160 | 100 | 90 | barrier 100 % |" in text and "stalls: barrier 78 %, wait 22 %" in text, text
    assert "a8160" not in text.split("address order:")[1], text  # executed 100 < 1000
    print("ncu_sass selftest: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="?", help="ncu --page source --csv --print-source sass output")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--region", action="append", default=[], help="NAME:LO:HI, hex addresses (low 20 bits)")
    ap.add_argument("--hot", type=int, default=0, help="list instructions executed at least this often")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    if not a.csv:
        ap.error("give the SASS CSV (or --selftest)")
    for spec in a.region:
        if not re.fullmatch(r"[^:]+:[0-9a-fA-F]+:[0-9a-fA-F]+", spec):
            ap.error(f"--region '{spec}': expected NAME:LO:HI with hex addresses")
    try:
        text = open(a.csv, encoding="utf-8", errors="replace").read()
    except OSError as e:
        raise SystemExit(f"error: cannot read {a.csv}: {e.strerror}")
    sys.stdout.write(report(load(text), a.top, a.region, a.hot))


if __name__ == "__main__":
    main()
