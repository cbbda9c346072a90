"""The models and points of issue 16's benchmark: transformers' LlamaForCausalLM at the Llama-3.2-1B shape and
Qwen2ForCausalLM at the Qwen2.5-0.5B shape, seeded random weights, float16, and the modules every peer runs:

  Prefill(model)(input_ids, attention_mask) -> logits of every position (use_cache=False): what
      torch.onnx.export(model, (input_ids, attention_mask)) gives a user.
  Step(model, config)(input_ids, attention_mask, position_ids, *past) -> (logits, *present): one step with a
      transformers DynamicCache in the optimum layout (bench/decode/export_llama_kv.py's module, reused).

Points: ("prefill", T) = T tokens, no cache; ("decode", P) = 1 token after P cached positions. Inputs of a point
are written once as .npy (write_inputs) and read by streamrt and the PyTorch peers alike.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "decode"))

SEED = 0
MODELS = {
    # Llama-3.2-1B's config.json (random weights).
    "llama": ("LlamaForCausalLM", "LlamaConfig", dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, rms_norm_eps=1e-5,
        max_position_embeddings=131072, tie_word_embeddings=True, rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=32.0, high_freq_factor=4.0, low_freq_factor=1.0,
                          original_max_position_embeddings=8192))),
    # Qwen2.5-0.5B's config.json (q/k/v carry biases in Qwen2).
    "qwen": ("Qwen2ForCausalLM", "Qwen2Config", dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, rms_norm_eps=1e-6, max_position_embeddings=32768,
        tie_word_embeddings=True, rope_theta=1000000.0, use_sliding_window=False)),
    # Llama-3.1-8B's config.json with 4 of its 32 layers (head size 128: the Hopper attention kernel's main
    # case; the whole model would be 16 GB of random weights to export for the same per-layer figures).
    "llama8b": ("LlamaForCausalLM", "LlamaConfig", dict(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-5,
        max_position_embeddings=131072, tie_word_embeddings=False, rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, high_freq_factor=4.0, low_freq_factor=1.0,
                          original_max_position_embeddings=8192))),
}
# CPU self-tests: the same structure (GQA, tied head, the same rope types), 2 layers, hidden 64.
TINY = {
    "llama": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
                  rope_scaling=dict(rope_type="llama3", factor=32.0, high_freq_factor=4.0, low_freq_factor=1.0,
                                    original_max_position_embeddings=256)),
    "qwen": dict(vocab_size=640, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=4096),
    "llama8b": dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=32, max_position_embeddings=4096,
                    rope_scaling=dict(rope_type="llama3", factor=8.0, high_freq_factor=4.0, low_freq_factor=1.0,
                                      original_max_position_embeddings=256)),
}
LABELS = {"llama": "Llama-3.2-1B shape", "qwen": "Qwen2.5-0.5B shape", "llama8b": "Llama-3.1-8B shape, 4 of 32 layers"}


def config(name, tiny=False):
    import transformers
    _, cfg_cls, kw = MODELS[name]
    kw = dict(kw, **(TINY[name] if tiny else {}))
    c = getattr(transformers, cfg_cls)(**kw)
    c._attn_implementation = "sdpa"
    return c


def build(name, device, tiny=False):
    """The seeded random model in float16 on `device`, eval mode (the same weights in every process)."""
    import transformers
    import export_llama_kv  # bench/decode
    c = config(name, tiny)
    return export_llama_kv.random_model(getattr(transformers, MODELS[name][0]), c, device, SEED), c


def head_dim(c):
    return getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads


def prefill_module(model):
    import torch

    class Prefill(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    return Prefill().eval()


def step_module(model, c):
    import export_llama_kv  # bench/decode: the optimum-layout step with a DynamicCache
    return export_llama_kv.Step(model, c).eval()


def io_names(kind, layers):
    if kind == "prefill":
        return ["input_ids", "attention_mask"], ["logits"]
    import export_llama_kv
    return export_llama_kv.io_names(layers)


def parse_points(text):
    """"prefill:1,prefill:512,decode:512" -> [("prefill", 1), ("prefill", 512), ("decode", 512)]"""
    out = []
    for p in text.replace(" ", ",").split(","):
        if p:
            kind, n = p.split(":")
            assert kind in ("prefill", "decode"), p
            out.append((kind, int(n)))
    return out


def point_key(model, batch, kind, n):
    return f"{model}_b{batch}_{kind}{n}"


def input_arrays(c, batch, kind, n, seed):
    """The inputs of a point in io_names order (numpy): token ids, an all-ones mask; for decode a position id
    after P cached positions and a random float16 cache (std 0.5)."""
    rng = np.random.default_rng(seed)
    if kind == "prefill":
        return [rng.integers(3, c.vocab_size, (batch, n), dtype=np.int64), np.ones((batch, n), np.int64)]
    feeds = [rng.integers(3, c.vocab_size, (batch, 1), dtype=np.int64), np.ones((batch, n + 1), np.int64),
             np.full((batch, 1), n, np.int64)]
    shape = (batch, c.num_key_value_heads, n, head_dim(c))
    for _ in range(2 * c.num_hidden_layers):
        feeds.append((rng.standard_normal(shape, dtype=np.float32) * 0.5).astype(np.float16))
    return feeds


def write_inputs(c, layers, batch, kind, n, outdir, seed):
    names, _ = io_names(kind, layers)
    os.makedirs(outdir, exist_ok=True)
    for name, a in zip(names, input_arrays(c, batch, kind, n, seed)):
        np.save(os.path.join(outdir, name + ".npy"), a)
    return names


def output_bytes(c, batch, kind, n):
    """Bytes streamrt writes with --output-dir at a point (float16 logits, and the presents for decode)."""
    if kind == "prefill":
        return batch * n * c.vocab_size * 2
    return batch * c.vocab_size * 2 + 2 * c.num_hidden_layers * batch * c.num_key_value_heads * (n + 1) * head_dim(c) * 2
