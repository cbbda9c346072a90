#!/usr/bin/env python3
"""Exports a model of the compressed-weight benchmark (issue 19): transformers' LlamaForCausalLM with random
float16 weights as one KV-cache step in the transformers / optimum layout (bench/decode/export_llama_kv.py's
Step and torch.onnx dynamo export, external data):

    python3 bench/quant/export.py 1b|8b OUTDIR [--tiny] [--init-device cuda|cpu]

  1b  the Llama-3.2-1B shape: bench/hf/models.py's config (16 layers, hidden 2048, MLP 8192, 32 / 8 heads,
      vocabulary 128256, tied embeddings, llama3 rope), 2.47 GB
  8b  the Llama-3-8B shape at 14 layers (bench/decode's model), 8.2 GB

--tiny: the same structures at CPU size (2 layers, hidden 256, weights above the 64 KiB streamable minimum).
The random weights are made on --init-device (seeded: on cuda the 8b model's are bench/decode's), then the model
moves to the CPU and is exported there (the GPU stays free for what the benchmark times meanwhile), written to
OUTDIR.partial and renamed to OUTDIR when complete. OUTDIR/export.json (also printed): config, weight bytes,
seconds per phase.
"""
import argparse
import json
import os
import shutil
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "decode"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "hf"))
import export_llama_kv  # noqa: E402  (bench/decode)
import models as hf_models  # noqa: E402  (bench/hf)

# The 1b model's CPU-size stand-in: bench/hf's tiny Llama (tied head, llama3 rope) widened so its weights stream.
TINY_1B = dict(hidden_size=256, intermediate_size=512, head_dim=64, vocab_size=512)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build(name, tiny, device):
    """The seeded random float16 model and its config."""
    if name == "8b":
        return export_llama_kv.build(2 if tiny else 14, tiny, device)
    if not tiny:
        return hf_models.build("llama", device)
    import transformers
    c = hf_models.config("llama", tiny=True)
    for k, v in TINY_1B.items():
        setattr(c, k, v)
    return export_llama_kv.random_model(transformers.LlamaForCausalLM, c, device, hf_models.SEED), c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=["1b", "8b"])
    ap.add_argument("outdir")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--init-device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    import transformers
    t0 = time.time()
    model, c = build(a.model, a.tiny, a.init_device)
    if a.init_device != "cpu":
        model = model.to("cpu")
        torch.cuda.empty_cache()
    build_s = time.time() - t0
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    log(f"built {a.model} ({c.num_hidden_layers} layers) on {a.init_device} in {build_s:.1f}s: "
        f"{weight_bytes / 1e9:.3f} GB")
    partial = a.outdir.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    t1 = time.time()
    with torch.no_grad():
        export_llama_kv.export(model, c, os.path.join(partial, "model.onnx"))
    export_s = time.time() - t1
    keys = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "tie_word_embeddings")
    info = dict(model=a.model, tiny=a.tiny, dtype="float16", weight_bytes=weight_bytes, init_device=a.init_device,
                build_s=round(build_s, 1), export_s=round(export_s, 1), torch=torch.__version__,
                transformers=transformers.__version__, config={k: getattr(c, k, None) for k in keys})
    with open(os.path.join(partial, "export.json"), "w") as f:
        json.dump(info, f)
    shutil.rmtree(a.outdir, ignore_errors=True)
    os.rename(partial, a.outdir)
    log(f"exported {a.model} in {export_s:.1f}s")
    print(json.dumps(info), flush=True)


if __name__ == "__main__":
    main()
