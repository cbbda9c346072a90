#!/usr/bin/env python3
"""Exports a benchmark model (bench/models.py) to ONNX for streamrt.

    python3 bench/export.py MODEL OUTDIR [--batch B] [--seq T] [--dtype fp32|fp16] [--tiny] [--check]

Writes OUTDIR/model.onnx (opset 17, fixed shapes, TorchScript exporter: dynamo=False), with the weights
in OUTDIR/model.onnx.data when they exceed 1.5 GB; the IR version is lowered to 8 when the exporter
writes a newer one (streamrt reads ONNX 1.12 models). Float32 by default: streamrt's --fp16 / --bf16
build flags convert. Prints the op types used and, last, one JSON line describing the export.
--check runs the exported model in onnxruntime (CPU) and compares it with PyTorch.
"""
import argparse
import collections
import json
import os
import shutil
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

EXTERNAL_DATA_THRESHOLD = int(1.5e9)  # bytes of initializers above which weights go to model.onnx.data
MAX_IR_VERSION = 8                     # ONNX 1.12 (streamrt's reader) knows IR versions up to 8
OPSET = 17


def initializer_bytes(model_proto):
    import onnx
    total = 0
    for init in model_proto.graph.initializer:
        n = 1
        for d in init.dims:
            n *= d
        total += n * onnx.helper.tensor_dtype_to_np_dtype(init.data_type).itemsize
    return total


def export(name, outdir, batch=1, seq=None, dtype="fp32", tiny=False, device="cpu", check=False,
           external_threshold=EXTERNAL_DATA_THRESHOLD):
    import onnx

    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "model.onnx")
    data_path = path + ".data"
    # The exporter writes here first (plus per-tensor files for models over 2 GB); removed after.
    tmp_dir = os.path.join(outdir, ".torch_export")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    os.makedirs(tmp_dir)
    tmp_path = os.path.join(tmp_dir, "model.onnx")
    t0 = time.time()
    model = models.build_model(name, dtype=dtype, device=device, tiny=tiny)
    inputs = models.example_inputs(name, batch, seq, dtype, device, tiny)
    input_names, output_names = models.io_names(name)
    t_build = time.time() - t0

    t0 = time.time()
    with torch.no_grad():
        torch.onnx.export(model, inputs, tmp_path, dynamo=False, opset_version=OPSET,
                          input_names=input_names, output_names=output_names, do_constant_folding=True)
    t_export = time.time() - t0

    # Re-save: lower the IR version, and move large weights to one external file. A model over 2 GB
    # comes from the exporter with external data already; onnx.load pulls it in from tmp's folder.
    t0 = time.time()
    proto = onnx.load(tmp_path, load_external_data=True)
    ir_from = proto.ir_version
    if proto.ir_version > MAX_IR_VERSION:
        proto.ir_version = MAX_IR_VERSION
    weight_bytes = initializer_bytes(proto)
    external = weight_bytes > external_threshold
    for stale in (path, data_path):
        if os.path.exists(stale):
            os.remove(stale)  # onnx appends to an existing external data file
    if external:
        onnx.save(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(data_path), size_threshold=1024)
    else:
        onnx.save(proto, path)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    t_save = time.time() - t0

    ops = collections.Counter(n.op_type for n in proto.graph.node)
    print(f"exported {name} ({'tiny' if tiny else 'full'}, {dtype}) -> {path}")
    print(f"  inputs: " + ", ".join(f"{i.name} {shape_of(i)}" for i in proto.graph.input))
    print(f"  outputs: " + ", ".join(f"{o.name} {shape_of(o)}" for o in proto.graph.output))
    print(f"  {models.count_parameters(model) / 1e6:.1f}M parameters, {weight_bytes / 1e6:.1f} MB of initializers"
          f"{' in ' + os.path.basename(data_path) if external else ''}; IR version {ir_from} -> {proto.ir_version}")
    print(f"  {len(proto.graph.node)} nodes, op types: " +
          ", ".join(f"{op} x{n}" for op, n in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))))
    print(f"  time: build {t_build:.1f}s, export {t_export:.1f}s, save {t_save:.1f}s")
    info = dict(model=name, tiny=tiny, dtype=dtype, batch=batch, seq=seq, path=path, external_data=external,
                weight_bytes=weight_bytes, nodes=len(proto.graph.node), op_types=dict(ops),
                ir_version=proto.ir_version, opset=OPSET, source=getattr(model, "source", "bench/models.py"),
                export_s=round(t_build + t_export + t_save, 2))
    del proto
    if check:
        info["check_max_abs_diff"] = check_with_onnxruntime(model, inputs, path)
    print(json.dumps(info))
    return info


def shape_of(value_info):
    t = value_info.type.tensor_type
    import onnx
    dims = "x".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim)
    return f"{onnx.TensorProto.DataType.Name(t.elem_type).lower()}[{dims}]"


def check_with_onnxruntime(model, inputs, path):
    import numpy as np
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.detach().cpu().numpy() for i, t in zip(sess.get_inputs(), inputs)}
    got = sess.run(None, feeds)[0]
    with torch.no_grad():
        want = model(*inputs).float().cpu().numpy()
    diff = float(np.max(np.abs(got.astype(np.float32) - want)))
    print(f"  onnxruntime vs torch: max abs diff {diff:.3g} (output scale {float(np.max(np.abs(want))):.3g})")
    return diff


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=models.MODELS)
    ap.add_argument("outdir")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=None, help="sequence length (gpt2, llama); default 512")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "fp16"],
                    help="weights/activations type of the exported graph (default fp32)")
    ap.add_argument("--tiny", action="store_true", help="tiny config (CPU tests)")
    ap.add_argument("--device", default="cpu",
                    help="where the model is built and traced: cpu (default), cuda (falls back to cpu), auto")
    ap.add_argument("--check", action="store_true", help="compare with onnxruntime (CPU)")
    ap.add_argument("--external-threshold-mb", type=float, default=EXTERNAL_DATA_THRESHOLD / 1e6,
                    help="weights go to model.onnx.data above this many MB (default 1500)")
    args = ap.parse_args()
    seq = args.seq or models.default_seq(args.model, args.tiny)
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # the TorchScript exporter's notice
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    run = lambda dev: export(args.model, args.outdir, args.batch, seq, args.dtype, args.tiny, dev,  # noqa: E731
                             args.check, int(args.external_threshold_mb * 1e6))
    if device == "cpu":
        run("cpu")
        return
    try:  # tracing on the GPU is faster; the CPU is the fallback
        run(device)
    except Exception as e:  # noqa: BLE001
        print(f"export on {device} failed ({type(e).__name__}: {e}); again on the CPU", flush=True)
        torch.cuda.empty_cache() if torch.cuda.is_available() else None
        run("cpu")


if __name__ == "__main__":
    main()
