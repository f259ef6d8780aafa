"""The two trained models' configurations and their training settings.

Both share one tokenizer (VOCAB = 4096: qwen4_exp's embedding and lm_head are
untied, so at 8192 they alone would take 6.3 MB of the ~12 MB f16 budget).

qwen3_small (Qwen3ForCausalLM, ~5.8 M parameters, ~11.6 MB in f16): hidden 256,
6 layers, 4 query heads / 2 KV heads of head_dim 64 (GQA as in Qwen3), SwiGLU
768 (3 x hidden), tied embeddings as Qwen3's small models. About the same
parameter count as qwen4_exp_small, so their held-out perplexities compare.

qwen4_exp_small (Qwen4ExpForCausalLM + MTP head, ~5.8 M parameters): the tiny
oracle fixture's config (tools/oracle/make_fixtures.py qwen4_exp_text_config:
same keys, same feature set) scaled up: hidden 64 -> 192, 4 -> 6 layers
(GDN, GDN + PLE, QSA, GDN, GDN, QSA: the published 3:1 GDN:attention rhythm,
PLE on one-indexed layer 2 as published), 4 hyper-connection streams of rank
32, 8 experts top-2 (48 wide) + a 96-wide shared expert in every layer, QSA
with budget 64 in blocks of 4 (so selection is active past 68 tokens, i.e. over
most of a 512-token window), bigram/trigram PLE tables of base 2048 (4 heads x
16 = 64 wide), head_dim 32 with partial rotary 0.5.

The QSA indexer has 16 heads (the published model has 4): its weights get no
gradient (a top-k selection; transformers has no indexer loss), so they keep
their random initial values, and a block's score sum_h relu(q_h . k) is then
exactly 0 whenever every head's dot product is negative: probability 1/16 per
block with 4 heads, 2^-16 with 16. Zero-score ties at the top-k boundary are
broken differently by torch.topk and by halo (lower index); a first 4-head
model differed between the two on one prompt row where selection is active
(most likely such a tie; the other 95 rows and the greedy continuation
matched); with 16 heads such ties are vanishingly rare. Cost: 74k parameters per QSA layer.

Epoch caps: the stdlib on the GPU machine (Ubuntu's Python 3.12, test suite
stripped) gives only ~2 M training tokens; qwen3_small runs at ~1 M tokens/s
and qwen4_exp_small at ~170 k, so both would see the training split dozens of
times in their time shares. A trial qwen3_small was best on validation after
~11 of 18 epochs, so its schedule ends at 12 epochs (~30 s), and
qwen4_exp_small's at 16 (~200 s); the time a model does not use goes to the
next one, and the weights of the best validation point are kept either way
(loop.train).
"""

VOCAB = 4096
SEQ_LEN = 512           # training window (tokens fed; targets are the next ones)
MAX_POSITIONS = 2048    # config max_position_embeddings (halo's default context)
MTP_LAMBDA = 0.3        # DeepSeek-V3's MTP loss weight for its first 10T tokens


def qwen3_config_dict(eos_id):
    return dict(
        vocab_size=VOCAB, hidden_size=256, intermediate_size=768, num_hidden_layers=6,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        max_position_embeddings=MAX_POSITIONS, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        bos_token_id=None, eos_token_id=eos_id, pad_token_id=None,
    )


def qwen4_config_dict(eos_id, base=None):
    """base: make_fixtures.qwen4_exp_text_config() (the fixture's dict), whose
    keys are kept and whose values are scaled here."""
    cfg = dict(base or {})
    cfg.update(
        vocab_size=VOCAB, hidden_size=192, num_hidden_layers=6,
        layer_types=["linear_attention", "linear_attention", "qwen_sparse_attention",
                     "linear_attention", "linear_attention", "qwen_sparse_attention"],
        num_attention_heads=6, num_key_value_heads=2, head_dim=32,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                         "mrope_section": [4, 2, 2], "mrope_interleaved": True},
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32,
        linear_conv_kernel_dim=4, hidden_act="silu", output_gate_type="sigmoid",
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48, shared_expert_intermediate_size=96,
        norm_topk_prob=True, hc_count=4, hc_lowrank=32,
        ple_layer_ids=[2], ple_embed_dim=64, ple_conv_kernel_size=4, ngram_size=3, heads_per_ngram=2,
        ngram_vocab_size_base=2048, make_ngram_vocab_size_divisible_by=128, seed=1234, split_ngram_parts=2,
        indexer_n_heads=16, indexer_kv_heads=1, indexer_head_dim=32, indexer_budget=64, indexer_compress_ratio=4,
        rms_norm_eps=1e-6, tie_word_embeddings=False, eos_token_id=eos_id, bos_token_id=None, pad_token_id=None,
        max_position_embeddings=MAX_POSITIONS,
    )
    return cfg


# Training settings. Batches are in windows of SEQ_LEN tokens.
TRAIN = {
    "qwen3_small": dict(batch=64, peak_lr=3e-3, min_lr_frac=0.1, warmup_steps=100, weight_decay=0.1,
                        betas=(0.9, 0.95), grad_clip=1.0, max_epochs=12.0),
    "qwen4_exp_small": dict(batch=64, peak_lr=2e-3, min_lr_frac=0.1, warmup_steps=100, weight_decay=0.1,
                            betas=(0.9, 0.95), grad_clip=1.0, max_epochs=16.0),
}
SMOKE = dict(batch=2, seq_len=64, steps=3, warmup_steps=2)
TIME_SHARE = {"qwen3_small": 0.4, "qwen4_exp_small": 0.6}
