"""Causal LMs held out from the generation search's rules (issue 46): architectures the zoo's
gpt2-tiny, llama-tiny and qwen2-tiny (on which the rules were written) do not cover, in four sets of
three, each chosen before any of its models was measured and measured once. Random weights from
transformers configs, nothing downloaded; sizes as the zoo's (4 layers, 256 wide, vocabulary 2048).

    python benchmarks/generate.py benchmarks/generate_heldout.py:gpt_neox benchmarks/generate_heldout.py:phi \\
        benchmarks/generate_heldout.py:gemma --techniques cache,compile,precision,quant,attention,threads
"""

from __future__ import annotations

import torch


def _build(config_name: str, model_name: str, **fields: object) -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, config_name)(vocab_size=2048, num_hidden_layers=4, max_position_embeddings=1024,
                                                **fields)
    return getattr(transformers, model_name)(config).eval()


def gpt_neox() -> torch.nn.Module:
    """GPT-NeoX / Pythia-style: parallel attention and MLP residuals, rotary on a quarter of each head."""
    return _build("GPTNeoXConfig", "GPTNeoXForCausalLM", hidden_size=256, num_attention_heads=8,
                  intermediate_size=1024, rotary_pct=0.25, use_parallel_residual=True)


def phi() -> torch.nn.Module:
    """Phi-2-style: one LayerNorm feeding attention and MLP in parallel, partial rotary, GELU MLP."""
    return _build("PhiConfig", "PhiForCausalLM", hidden_size=256, num_attention_heads=8, intermediate_size=1024,
                  partial_rotary_factor=0.5)


def gemma() -> torch.nn.Module:
    """Gemma-style: multi-query attention (one key-value head), GeGLU MLP, embeddings scaled by sqrt(d), tied head."""
    return _build("GemmaConfig", "GemmaForCausalLM", hidden_size=256, num_attention_heads=8, num_key_value_heads=1,
                  head_dim=32, intermediate_size=1024)


# -- a second held-out set (run 5), chosen after run 4 and before any of them was measured ------------


def opt() -> torch.nn.Module:
    """OPT-style: learned positions (offset 2), ReLU MLP, pre-LayerNorm, full multi-head attention."""
    import transformers

    torch.manual_seed(0)
    config = transformers.OPTConfig(vocab_size=2048, hidden_size=256, num_hidden_layers=4, ffn_dim=1024,
                                    num_attention_heads=8, max_position_embeddings=1024, word_embed_proj_dim=256)
    return transformers.OPTForCausalLM(config).eval()


def bloom() -> torch.nn.Module:
    """BLOOM-style: ALiBi position biases instead of position embeddings, LayerNorm after the embeddings."""
    import transformers

    torch.manual_seed(0)
    config = transformers.BloomConfig(vocab_size=2048, hidden_size=256, n_layer=4, n_head=8)
    return transformers.BloomForCausalLM(config).eval()


def stablelm() -> torch.nn.Module:
    """StableLM-2-style: LayerNorm, rotary on a quarter of each head, SwiGLU MLP, grouped-query attention."""
    return _build("StableLmConfig", "StableLmForCausalLM", hidden_size=256, num_attention_heads=8,
                  num_key_value_heads=2, intermediate_size=688, partial_rotary_factor=0.25)


# -- a third held-out set (run 6), chosen after run 5's rule change and before any of them was measured --


def mistral() -> torch.nn.Module:
    """Mistral-style: sliding-window attention, grouped-query attention (2 key-value heads), SwiGLU MLP, RMSNorm."""
    return _build("MistralConfig", "MistralForCausalLM", hidden_size=256, num_attention_heads=8,
                  num_key_value_heads=2, intermediate_size=688, sliding_window=128)


def gptj() -> torch.nn.Module:
    """GPT-J-style: interleaved rotary on part of each head, attention and MLP in parallel from one LayerNorm."""
    import transformers

    torch.manual_seed(0)
    config = transformers.GPTJConfig(vocab_size=2048, n_embd=256, n_layer=4, n_head=8, rotary_dim=16,
                                     n_positions=1024)
    return transformers.GPTJForCausalLM(config).eval()


def starcoder2() -> torch.nn.Module:
    """StarCoder2-style: LayerNorm with biases, GELU MLP, grouped-query attention, sliding window."""
    return _build("Starcoder2Config", "Starcoder2ForCausalLM", hidden_size=256, num_attention_heads=8,
                  num_key_value_heads=2, intermediate_size=1024, sliding_window=256)


# -- a fourth held-out set (run 7), chosen after run 6's rule change and before any of them was measured --


def olmo() -> torch.nn.Module:
    """OLMo-style: LayerNorm without learnable parameters, SwiGLU MLP, rotary, no biases."""
    return _build("OlmoConfig", "OlmoForCausalLM", hidden_size=256, num_attention_heads=8, intermediate_size=688)


def falcon() -> torch.nn.Module:
    """Falcon-style: multi-query attention (one key-value head), parallel attention and MLP, rotary, GELU."""
    import transformers

    torch.manual_seed(0)
    config = transformers.FalconConfig(vocab_size=2048, hidden_size=256, num_hidden_layers=4, num_attention_heads=8,
                                       multi_query=True, parallel_attn=True, new_decoder_architecture=False)
    return transformers.FalconForCausalLM(config).eval()


def granite() -> torch.nn.Module:
    """Granite-style: Llama-shaped with scaled embeddings, residuals and logits, grouped-query attention."""
    return _build("GraniteConfig", "GraniteForCausalLM", hidden_size=256, num_attention_heads=8, num_key_value_heads=2,
                  intermediate_size=688, embedding_multiplier=12.0, residual_multiplier=0.22, logits_scaling=8.0)
