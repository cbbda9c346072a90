#!/usr/bin/env python3
"""Plans and measurements the compressed-weight benchmark shares (bench/quant/run.sh, accuracy.py):

    python3 bench/quant/plans.py build MODEL.onnx PLAN --scheme fp16|int8|fp8|int4[:GROUP] [--device cuda]
        [--max-new 32] [--opt-past 512] [--max-past 576] [--json FILE] [--label L] [--timeout S]
    python3 bench/quant/plans.py bandwidth --json FILE [--label L]

build: `streamrt build --weight-streaming [--weight-quant SCHEME]` of a KV-cache decoder (the transformers /
optimum layout) with one profile: 1..max-new new tokens, 1..max-past cached positions (opt: one token after
opt-past). Appends a JSON line: label, scheme, seconds, plan bytes, streamable bytes and the build's own lines.
bandwidth: pinned host-to-device copies of 1 GiB (bench/streaming/torch_peer.py's measure_bandwidth), one
JSON line. The streamrt binaries: STREAMRT_BIN_DIR (run.sh sets it from the carried .gpu or build/bin).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCHEMES = ("fp16", "int8", "fp8", "int4", "int4:32", "int4:64", "int4:128")


def bin_dir():
    return os.environ.get("STREAMRT_BIN_DIR") or os.path.join(ROOT, "build", "bin")


def kv_inputs(onnx_path):
    """[(name, kv heads, head dim)] of the past_key_values inputs of an export."""
    import onnx
    m = onnx.load(onnx_path, load_external_data=False)
    out = []
    for i in m.graph.input:
        if i.name.startswith("past_key_values."):
            d = i.type.tensor_type.shape.dim
            out.append((i.name, d[1].dim_value, d[3].dim_value))
    return out


def profile_args(onnx_path, max_new, opt_past, max_past):
    """`--profile` arguments: new tokens 1..max_new, cached positions 1..max_past, batch 1; the mask spans both."""
    args = [f"input_ids:1x1:1x1:1x{max_new}", f"position_ids:1x1:1x1:1x{max_new}",
            f"attention_mask:1x2:1x{opt_past + 1}:1x{max_past + max_new}"]
    for name, heads, dim in kv_inputs(onnx_path):
        args.append(f"{name}:1x{heads}x1x{dim}:1x{heads}x{opt_past}x{dim}:1x{heads}x{max_past}x{dim}")
    out = []
    for a in args:
        out += ["--profile", a]
    return out


def quant_flag(scheme):
    if scheme not in SCHEMES:
        raise ValueError(f"scheme {scheme!r}: expected one of {', '.join(SCHEMES)}")
    return [] if scheme == "fp16" else ["--weight-quant", scheme]


def build(onnx_path, plan, scheme, device="cuda", max_new=32, opt_past=512, max_past=576, timeout=None, log=None):
    """Builds one plan; returns the record (with "error" when the build failed or timed out)."""
    cmd = [os.path.join(bin_dir(), "streamrt"), "build", onnx_path, "-o", plan, "--device", device,
           "--weight-streaming", "--progress", "off"] + quant_flag(scheme) + profile_args(onnx_path, max_new, opt_past,
                                                                                         max_past)
    rec = dict(plan=os.path.basename(plan), scheme=scheme, device=device)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        text, rc = out.decode(errors="replace") if isinstance(out, bytes) else out, None
        rec["error"] = f"failed: build timed out after {timeout:.0f}s"
    rec["build_s"] = round(time.time() - t0, 2)
    if log:
        with open(log, "a") as f:
            f.write(" ".join(cmd) + "\n" + text + "\n")
    if rc not in (0, None):
        last = [line for line in text.strip().splitlines() if line.strip()]
        rec["error"] = f"failed: build exit {rc}: {last[-1][:200] if last else ''}"
    if "error" in rec:
        if os.path.exists(plan):
            os.remove(plan)
        return rec
    rec["plan_bytes"] = os.path.getsize(plan)
    m = re.search(r"weight streaming: (\d+) weights streamable, ([\d.]+) MiB", text)
    if m:
        rec["streamable_weights"], rec["streamable_bytes"] = int(m.group(1)), int(float(m.group(2)) * 1048576)
    m = re.search(r"(\d+) MatMul / Gemm steps read compressed weights", text)
    if m:
        rec["steps_quantized"] = int(m.group(1))
    rec["report"] = [line.strip() for line in text.splitlines() if line.startswith(("built", "  "))][:12]
    return rec


def append(path, rec):
    print(json.dumps(rec), flush=True)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")


def bandwidth(label):
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "streaming"))
    from torch_peer import measure_bandwidth
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    rec = dict(impl="h2d_bandwidth", label=label, device=torch.cuda.get_device_name() if cuda else "cpu")
    rec.update(measure_bandwidth(dev, (1 << 30) if cuda else (64 << 20), 5, True))
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("onnx")
    b.add_argument("plan")
    b.add_argument("--scheme", required=True, choices=SCHEMES)
    b.add_argument("--device", default="cuda")
    b.add_argument("--max-new", type=int, default=32)
    b.add_argument("--opt-past", type=int, default=512)
    b.add_argument("--max-past", type=int, default=576)
    b.add_argument("--timeout", type=float)
    b.add_argument("--label", default="")
    b.add_argument("--json")
    b.add_argument("--log")
    w = sub.add_parser("bandwidth")
    w.add_argument("--label", default="")
    w.add_argument("--json")
    a = ap.parse_args()
    if a.cmd == "bandwidth":
        try:
            rec = bandwidth(a.label)
        except Exception as e:  # noqa: BLE001 - recorded: the report shows no bound then
            rec = dict(impl="h2d_bandwidth", label=a.label, error=f"failed: {type(e).__name__}: {e}"[:300])
        append(a.json, rec)
        return 0 if "error" not in rec else 1
    rec = dict(label=a.label, **build(a.onnx, a.plan, a.scheme, a.device, a.max_new, a.opt_past, a.max_past,
                                       a.timeout, a.log))
    append(a.json, rec)
    return 0 if "error" not in rec else 1


if __name__ == "__main__":
    sys.exit(main())
