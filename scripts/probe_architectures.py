#!/usr/bin/env python3
"""A wider probe than the committed corpus: ~70 more transformers architectures (decoders with soft-capping,
ALiBi, partial rotary, mixtures of experts, latent attention; encoders; vision; audio; encoder-decoders; KV-cache
decode steps), small random configs, exported through both torch.onnx exporters into a scratch folder in the
corpus layout by scripts/export_corpus.py's machinery (PyTorch's outputs checked against onnxruntime). Then:

    scripts/probe_architectures.py [--only gemma2 phi ...] [--exporter dynamo] [--out /tmp/probe]
    build/bin/streamrt onnx-test /tmp/probe --no-skip -j 2 --rtol 1e-3 --atol 1e-4      # and --fp16 / --bf16

Not committed as test data (the GPU machine gets the tracked tree within 64 MiB); run it after a change to the
importer, the fusion passes or the precision pass. 2026-11-29: every export torch produced passed (fp32, fp16,
bf16) once a ConstantOfShape without `value` followed --fp16 (tests/corpus/transformers/README.md lists them).
"""
import sys

import export_corpus as ec
from export_corpus import decode_step, encoder_inputs, lm_inputs, token_inputs, wrap

torch = transformers = None  # bound in main(), after export_corpus imports them


def _set_attn(c, attn):
    """Ask for `attn` (sdpa by default); models without it fall back to eager at construction."""
    c._attn_implementation = attn


def _construct(cls_name, c, attn):
    for impl in ([attn] if attn != "sdpa" else ["sdpa", "eager"]):
        try:
            _set_attn(c, impl)
            return getattr(transformers, cls_name)(c)
        except (ValueError, NotImplementedError):
            if impl == "eager":
                raise
    raise RuntimeError("unreachable")


def plm_case(cls_name, cfg_name, attn="sdpa", defaults=True, **cfg):
    def make(gen):
        kw = {**ec.TINY_LM, **cfg} if defaults else dict(cfg)
        c = getattr(transformers, cfg_name)(use_cache=False, **kw)
        return lm_inputs(_construct(cls_name, c, attn).eval(), c.vocab_size, gen)
    return make


def penc_case(cls_name, cfg_name, outputs, token_type=False, attn="sdpa", encoder_only=False, **cfg):
    def make(gen):
        kw = dict(cfg)
        kw.setdefault("vocab_size", 256)
        c = getattr(transformers, cfg_name)(**kw)
        model = _construct(cls_name, c, attn).eval()
        if encoder_only:
            model = model.get_encoder().eval()
        return encoder_inputs(model, c.vocab_size, outputs, token_type, gen)
    return make


def pvision_case(cls_name, cfg_name, size, outputs=("last_hidden_state", "pooler_output"), **cfg):
    def make(gen):
        c = getattr(transformers, cfg_name)(**cfg)
        model = _construct(cls_name, c, "sdpa").eval()
        m = wrap(model, list(outputs))
        m.names = ["pixel_values"]
        data = [{"pixel_values": torch.randn(b, 3, size, size, generator=gen)} for b in (2, 1)]
        return m, data, list(outputs)
    return make


def wav2vec2_case(gen):
    c = transformers.Wav2Vec2Config(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                                    conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                    num_conv_pos_embedding_groups=4, feat_extract_norm="group",
                                    do_stable_layer_norm=False, mask_time_prob=0.0)
    model = _construct("Wav2Vec2Model", c, "sdpa").eval()
    m = wrap(model, ["last_hidden_state", "extract_features"])
    m.names = ["input_values"]
    data = [{"input_values": torch.randn(b, n, generator=gen)} for b, n in ((2, 400), (1, 320))]
    return m, data, ["last_hidden_state", "extract_features"]


def seq2seq_case(cls_name, cfg_name, **cfg):
    """A whole encoder-decoder forward (teacher forcing): input_ids, attention_mask, decoder_input_ids."""
    def make(gen):
        c = getattr(transformers, cfg_name)(use_cache=False, **cfg)
        model = _construct(cls_name, c, "sdpa").eval()
        m = wrap(model, ["logits"], use_cache=False)
        m.names = ["input_ids", "attention_mask", "decoder_input_ids"]
        data = []
        for b, s, t in ((2, 12, 6), (1, 7, 4)):
            d = token_inputs(b, s, 256, "right", gen)
            d["decoder_input_ids"] = torch.randint(3, 256, (b, t), generator=gen)
            data.append(d)
        return m, data, ["logits"]
    return make


BERTLIKE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=64)

PROBE_CASES = {
    # decoders
    "gemma2": plm_case("Gemma2ForCausalLM", "Gemma2Config", attn="eager", num_key_value_heads=2, head_dim=16,
                       sliding_window=4, attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
    "gemma3": plm_case("Gemma3ForCausalLM", "Gemma3TextConfig", num_key_value_heads=2, head_dim=16,
                       sliding_window=4, layer_types=["sliding_attention", "full_attention"]),
    "phi": plm_case("PhiForCausalLM", "PhiConfig", partial_rotary_factor=0.5),
    "falcon": plm_case("FalconForCausalLM", "FalconConfig", defaults=False, vocab_size=256, hidden_size=32,
                       num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=128),
    "falcon_alibi": plm_case("FalconForCausalLM", "FalconConfig", defaults=False, vocab_size=256,
                             hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=True,
                             new_decoder_architecture=False, multi_query=True, parallel_attn=True,
                             max_position_embeddings=128),
    "opt": plm_case("OPTForCausalLM", "OPTConfig", defaults=False, vocab_size=256, hidden_size=32,
                    word_embed_proj_dim=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
                    max_position_embeddings=128, pad_token_id=1, bos_token_id=2, eos_token_id=2),
    "bloom": plm_case("BloomForCausalLM", "BloomConfig", defaults=False, vocab_size=256, hidden_size=32,
                      n_layer=2, n_head=4),
    "stablelm": plm_case("StableLmForCausalLM", "StableLmConfig", num_key_value_heads=2),
    "starcoder2": plm_case("Starcoder2ForCausalLM", "Starcoder2Config", num_key_value_heads=2,
                           sliding_window=4),
    "olmo": plm_case("OlmoForCausalLM", "OlmoConfig", num_key_value_heads=2, clip_qkv=0.5),
    "granite": plm_case("GraniteForCausalLM", "GraniteConfig", num_key_value_heads=2,
                        embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125,
                        logits_scaling=8.0),
    "smollm3": plm_case("SmolLM3ForCausalLM", "SmolLM3Config", num_key_value_heads=2, pad_token_id=0,
                        bos_token_id=1, eos_token_id=2, no_rope_layers=[1, 0]),
    "qwen2_moe": plm_case("Qwen2MoeForCausalLM", "Qwen2MoeConfig", num_key_value_heads=2, num_experts=4,
                          num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=32),
    "mixtral": plm_case("MixtralForCausalLM", "MixtralConfig", num_key_value_heads=2, num_local_experts=4,
                        num_experts_per_tok=2),
    "qwen2_moe_bmm": plm_case("Qwen2MoeForCausalLM", "Qwen2MoeConfig", num_key_value_heads=2, num_experts=4,
                              num_experts_per_tok=2, moe_intermediate_size=16,
                              shared_expert_intermediate_size=32, experts_implementation="batched_mm"),
    "mixtral_bmm": plm_case("MixtralForCausalLM", "MixtralConfig", num_key_value_heads=2, num_local_experts=4,
                            num_experts_per_tok=2, experts_implementation="batched_mm"),
    "mixtral_eager": plm_case("MixtralForCausalLM", "MixtralConfig", num_key_value_heads=2, num_local_experts=4,
                              num_experts_per_tok=2, experts_implementation="eager"),
    # encoders
    "distilbert": penc_case("DistilBertModel", "DistilBertConfig", ["last_hidden_state"], dim=32, hidden_dim=64,
                            n_layers=2, n_heads=4, max_position_embeddings=64),
    "roberta": penc_case("RobertaModel", "RobertaConfig", ["last_hidden_state", "pooler_output"], pad_token_id=0,
                         **BERTLIKE),
    "xlm_roberta": penc_case("XLMRobertaModel", "XLMRobertaConfig", ["last_hidden_state", "pooler_output"],
                             pad_token_id=0, **BERTLIKE),
    "electra": penc_case("ElectraModel", "ElectraConfig", ["last_hidden_state"], True, embedding_size=16,
                         **BERTLIKE),
    "deberta_v2": penc_case("DebertaV2Model", "DebertaV2Config", ["last_hidden_state"], False,
                            relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=16,
                            max_relative_positions=32, position_biased_input=False, norm_rel_ebd="layer_norm",
                            share_att_key=True, type_vocab_size=0, **BERTLIKE),
    "albert": penc_case("AlbertModel", "AlbertConfig", ["last_hidden_state", "pooler_output"], True,
                        embedding_size=16, **BERTLIKE),
    "mobilebert": penc_case("MobileBertModel", "MobileBertConfig", ["last_hidden_state", "pooler_output"], True,
                            embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16,
                            num_feedforward_networks=2, **BERTLIKE),
    "clip_text": penc_case("CLIPTextModel", "CLIPTextConfig", ["last_hidden_state", "pooler_output"],
                           eos_token_id=255, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, max_position_embeddings=64),
    "bart_encoder": penc_case("BartModel", "BartConfig", ["last_hidden_state"], encoder_only=True, d_model=32,
                              encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                              decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                              max_position_embeddings=64),
    "bart": seq2seq_case("BartForConditionalGeneration", "BartConfig", vocab_size=256, d_model=32, encoder_layers=2,
                         decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                         decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
                         eos_token_id=2, decoder_start_token_id=2),
    # vision / audio
    "clip_vision": pvision_case("CLIPVisionModel", "CLIPVisionConfig", 32, hidden_size=32, intermediate_size=64,
                                num_hidden_layers=2, num_attention_heads=4, image_size=32, patch_size=8),
    "swin": pvision_case("SwinModel", "SwinConfig", 32, image_size=32, patch_size=4, embed_dim=16,
                         depths=[1, 1], num_heads=[2, 2], window_size=4),
    "wav2vec2": wav2vec2_case,
}


def decode_case(cls_name, cfg_name, attn="sdpa", **cfg):
    """One KV-cache decode step (optimum layout) for any causal LM, as export_corpus's llama_decode."""
    def make(gen):
        c = getattr(transformers, cfg_name)(**{**ec.TINY_LM, **cfg})
        return decode_step(_construct(cls_name, c, attn).eval(), c, gen)
    return make


PROBE_CASES.update({
    # more decoders
    "gptj": plm_case("GPTJForCausalLM", "GPTJConfig", defaults=False, vocab_size=256, n_embd=32, n_layer=2,
                     n_head=4, rotary_dim=4, n_inner=64, n_positions=128),
    "codegen": plm_case("CodeGenForCausalLM", "CodeGenConfig", defaults=False, vocab_size=256, n_embd=32,
                        n_layer=2, n_head=4, rotary_dim=4, n_inner=64, n_positions=128, n_ctx=128),
    "cohere": plm_case("CohereForCausalLM", "CohereConfig", num_key_value_heads=2, logit_scale=0.125,
                       use_qk_norm=True, pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "persimmon": plm_case("PersimmonForCausalLM", "PersimmonConfig", partial_rotary_factor=0.5,
                          qk_layernorm=True, pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "olmo2": plm_case("Olmo2ForCausalLM", "Olmo2Config", num_key_value_heads=2, pad_token_id=0,
                      bos_token_id=1, eos_token_id=2),
    "gpt_bigcode": plm_case("GPTBigCodeForCausalLM", "GPTBigCodeConfig", defaults=False, vocab_size=256, n_embd=32,
                            n_layer=2, n_head=4, n_inner=64, n_positions=128, multi_query=True,
                            bos_token_id=1, eos_token_id=2),
    "mpt": plm_case("MptForCausalLM", "MptConfig", defaults=False, vocab_size=256, d_model=32, n_heads=4,
                    n_layers=2, expansion_ratio=2, max_seq_len=128),
    "deepseek_v3": plm_case("DeepseekV3ForCausalLM", "DeepseekV3Config", num_key_value_heads=4,
                            moe_intermediate_size=16, n_routed_experts=4, n_shared_experts=1,
                            num_experts_per_tok=2, n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=16,
                            qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, first_k_dense_replace=1,
                            experts_implementation="batched_mm", pad_token_id=0, bos_token_id=1,
                            eos_token_id=2),
    "qwen3_moe": plm_case("Qwen3MoeForCausalLM", "Qwen3MoeConfig", num_key_value_heads=2, head_dim=16,
                          num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                          experts_implementation="batched_mm"),
    "llama3_rope": plm_case("LlamaForCausalLM", "LlamaConfig", num_key_value_heads=2,
                            rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 8}),
    "phi3_longrope": plm_case("Phi3ForCausalLM", "Phi3Config", num_key_value_heads=2, pad_token_id=0,
                              max_position_embeddings=64, original_max_position_embeddings=8,
                              rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                               "short_factor": [1.0 + 0.1 * i for i in range(4)],
                                               "long_factor": [2.0 + 0.5 * i for i in range(4)]}),
    "qwen2_eager": plm_case("Qwen2ForCausalLM", "Qwen2Config", attn="eager", num_key_value_heads=2),
    "phi_eager": plm_case("PhiForCausalLM", "PhiConfig", attn="eager", partial_rotary_factor=0.5),
    # encoders / vision / audio
    "modernbert": penc_case("ModernBertModel", "ModernBertConfig", ["last_hidden_state"], hidden_size=32,
                            intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                            local_attention=4, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                            eos_token_id=2, cls_token_id=1, sep_token_id=2),
    "esm": penc_case("EsmModel", "EsmConfig", ["last_hidden_state", "pooler_output"], hidden_size=32,
                     intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     position_embedding_type="rotary", pad_token_id=0, mask_token_id=1,
                     max_position_embeddings=64),
    "bert_eager": penc_case("BertModel", "BertConfig", ["last_hidden_state", "pooler_output"], True, attn="eager",
                            **BERTLIKE),
    "dinov2": pvision_case("Dinov2Model", "Dinov2Config", 32, hidden_size=32, mlp_ratio=2, num_hidden_layers=2,
                           num_attention_heads=4, image_size=32, patch_size=8),
    "beit": pvision_case("BeitModel", "BeitConfig", 32, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, image_size=32, patch_size=8, use_relative_position_bias=True,
                         use_mean_pooling=True),
    "siglip_vision": pvision_case("SiglipVisionModel", "SiglipVisionConfig", 32, hidden_size=32,
                                  intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  image_size=32, patch_size=8),
    "resnet": pvision_case("ResNetModel", "ResNetConfig", 32, embedding_size=16, hidden_sizes=[16, 32],
                           depths=[1, 1]),
    "mobilenet_v2": pvision_case("MobileNetV2Model", "MobileNetV2Config", 32, image_size=32,
                                 depth_multiplier=0.35),
    # KV-cache decode steps
    "gemma2_decode": decode_case("Gemma2ForCausalLM", "Gemma2Config", attn="eager", num_key_value_heads=2,
                                 head_dim=16, sliding_window=4),
    "gemma3_decode": decode_case("Gemma3ForCausalLM", "Gemma3TextConfig", num_key_value_heads=2, head_dim=16,
                                 sliding_window=4, layer_types=["sliding_attention", "full_attention"]),
    "phi_decode": decode_case("PhiForCausalLM", "PhiConfig", partial_rotary_factor=0.5),
    "bloom_decode": decode_case("BloomForCausalLM", "BloomConfig"),
    "falcon_decode": decode_case("FalconForCausalLM", "FalconConfig"),
    "opt_decode": decode_case("OPTForCausalLM", "OPTConfig", word_embed_proj_dim=32, ffn_dim=64,
                              pad_token_id=1, bos_token_id=2, eos_token_id=2),
    "starcoder2_decode": decode_case("Starcoder2ForCausalLM", "Starcoder2Config", num_key_value_heads=2,
                                     sliding_window=4),
    "gpt_neox_decode": decode_case("GPTNeoXForCausalLM", "GPTNeoXConfig"),
    "qwen3_decode": decode_case("Qwen3ForCausalLM", "Qwen3Config", num_key_value_heads=2, head_dim=16),
})


def whisper_case(gen):
    c = transformers.WhisperConfig(vocab_size=256, num_mel_bins=16, d_model=32, encoder_layers=2,
                                   encoder_attention_heads=4, decoder_layers=2, decoder_attention_heads=4,
                                   encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=32,
                                   max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                   decoder_start_token_id=1, use_cache=False)
    model = _construct("WhisperForConditionalGeneration", c, "sdpa").eval()
    m = wrap(model, ["logits"], use_cache=False)
    m.names = ["input_features", "decoder_input_ids"]
    data = [{"input_features": torch.randn(b, 16, 64, generator=gen),
             "decoder_input_ids": torch.randint(3, 256, (b, t), generator=gen)} for b, t in ((2, 6), (1, 4))]
    return m, data, ["logits"]


def audio_case(cls_name, cfg_name, **cfg):
    def make(gen):
        kw = dict(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                  num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, mask_time_prob=0.0)
        kw.update(cfg)
        c = getattr(transformers, cfg_name)(**kw)
        model = _construct(cls_name, c, "sdpa").eval()
        m = wrap(model, ["last_hidden_state"])
        m.names = ["input_values"]
        data = [{"input_values": torch.randn(b, n, generator=gen)} for b, n in ((2, 400), (1, 320))]
        return m, data, ["last_hidden_state"]
    return make


PROBE_CASES.update({
    "falcon_alibi": PROBE_CASES["falcon_alibi"],
    "whisper": whisper_case,
    "t5": seq2seq_case("T5ForConditionalGeneration", "T5Config", vocab_size=256, d_model=32, d_kv=8, d_ff=64,
                       num_layers=2, num_heads=4, decoder_start_token_id=0),
    "m2m100": seq2seq_case("M2M100ForConditionalGeneration", "M2M100Config", vocab_size=256, d_model=32,
                           encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                           decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                           max_position_embeddings=64, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                           decoder_start_token_id=2),
    "marian": seq2seq_case("MarianMTModel", "MarianConfig", vocab_size=256, d_model=32, encoder_layers=2,
                           decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1,
                           eos_token_id=2, decoder_start_token_id=1),
    "mamba": plm_case("MambaForCausalLM", "MambaConfig", defaults=False, vocab_size=256, hidden_size=32,
                      state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4, pad_token_id=0,
                      bos_token_id=1, eos_token_id=2),
    "wavlm": audio_case("WavLMModel", "WavLMConfig", num_buckets=32, max_bucket_distance=64),
    "hubert": audio_case("HubertModel", "HubertConfig"),
    "segformer": pvision_case("SegformerModel", "SegformerConfig", 32, outputs=("last_hidden_state",),
                              num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                              patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2]),
    "convbert": penc_case("ConvBertModel", "ConvBertConfig", ["last_hidden_state"], True, embedding_size=32,
                          **BERTLIKE),
    "squeezebert": penc_case("SqueezeBertModel", "SqueezeBertConfig", ["last_hidden_state", "pooler_output"], True,
                             embedding_size=32, q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2,
                             intermediate_groups=2, output_groups=2, **BERTLIKE),
    "xlnet": penc_case("XLNetModel", "XLNetConfig", ["last_hidden_state"], True, d_model=32, n_layer=2, n_head=4,
                       d_inner=64),
    "funnel": penc_case("FunnelBaseModel", "FunnelConfig", ["last_hidden_state"], True, block_sizes=[1, 1],
                        d_model=32, n_head=4, d_head=8, d_inner=64),
    "deberta": penc_case("DebertaModel", "DebertaConfig", ["last_hidden_state"], True, relative_attention=True,
                         pos_att_type=["p2c", "c2p"], max_relative_positions=32, **BERTLIKE),
    "mpnet": penc_case("MPNetModel", "MPNetConfig", ["last_hidden_state", "pooler_output"], pad_token_id=0,
                       **BERTLIKE),
    "longformer": penc_case("LongformerModel", "LongformerConfig", ["last_hidden_state"], attention_window=4,
                            pad_token_id=0, **BERTLIKE),
    "gemma3_eager": plm_case("Gemma3ForCausalLM", "Gemma3TextConfig", attn="eager", num_key_value_heads=2,
                             head_dim=16, sliding_window=4, attn_logit_softcapping=20.0,
                             final_logit_softcapping=30.0, layer_types=["sliding_attention", "full_attention"]),
})


def main():
    global torch, transformers
    ec.lazy_imports()
    torch, transformers = ec.torch, ec.transformers
    ec.CASES = PROBE_CASES
    ec.CASE_EXPORTERS = {}
    ec.DEFAULT_OUT = "/tmp/probe"
    return ec.main()


if __name__ == "__main__":
    sys.exit(main())
