"""Built-in models (``zoo:NAME``): random weights, never downloaded.

``mlp``, ``cnn`` and ``transformer`` are pure torch; ``bert-base``, ``resnet50`` and ``gpt2`` are
built from transformers configs (the ``zoo`` extra). Each entry also carries the source of a
``build()`` that a recipe can embed, so the recipe rebuilds the model without pitstop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ZooEntry:
    """A built-in model: how to build it, its input spec and default batch sizes."""

    name: str
    description: str
    build: Callable[[], nn.Module]
    input_spec: str
    batch_sizes: tuple[int, ...]
    recipe_build: Callable[[], str] | None = None  # source of `def build():` for recipes


def _source_of(*objects: object, call: str) -> Callable[[], str]:
    """A recipe ``build()`` that embeds these definitions (pure torch) and returns ``call``."""

    def source() -> str:
        import inspect

        defs = "\n\n".join(inspect.getsource(o) for o in objects)  # type: ignore[arg-type]
        return f"from torch import nn\n\n\n{defs}\n\ndef build():\n    return {call}\n"

    return source


def _hf(name: str, config: str, model: str, **kwargs: int) -> tuple[Callable[[], nn.Module], Callable[[], str]]:
    """A transformers model built from its default config with random weights (no download)."""
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items())

    def build() -> nn.Module:
        from pitstop._optional import require

        transformers = require("transformers", f"zoo:{name}")
        return getattr(transformers, model)(getattr(transformers, config)(**kwargs))

    def source() -> str:
        return (f"def build():\n    from transformers import {config}, {model}\n\n"
                f"    return {model}({config}({args}))  # random weights, nothing downloaded\n")

    return build, source


def mlp() -> nn.Module:
    """The published MLP benchmark: 1024-2048-2048-1024-10 with ReLUs (docs/claims.md)."""
    return nn.Sequential(
        nn.Linear(1024, 2048), nn.ReLU(),
        nn.Linear(2048, 2048), nn.ReLU(),
        nn.Linear(2048, 1024), nn.ReLU(),
        nn.Linear(1024, 10),
    )


class _ResBlock(nn.Module):
    """conv-bn-relu-conv-bn plus a (projected) shortcut: a ResNet basic block."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class SmallCNN(nn.Module):
    """A ResNet-style CNN for 3x64x64 images: stem, 3 stages of basic blocks, dropout, 10 logits."""

    def __init__(self, width: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)
        )
        self.layer1 = _ResBlock(width, width, 1)
        self.layer2 = _ResBlock(width, 2 * width, 2)
        self.layer3 = _ResBlock(2 * width, 4 * width, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(4 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, 3, H, W)
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return self.fc(self.dropout(self.pool(x).flatten(1)))  # (B, classes)


class SmallTransformer(nn.Module):
    """A token classifier: embedding + learned positions, pre-norm encoder layers, mean-pool head."""

    def __init__(self, vocab: int = 1000, d_model: int = 256, heads: int = 4, layers: int = 4,
                 seq_len: int = 128, classes: int = 10, dropout: float = 0.1) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(1, seq_len, d_model) * 0.02)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout,
                                       batch_first=True, norm_first=True)
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # tokens: (B, T) int64
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]  # (B, T, C)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x).mean(dim=1))  # (B, classes)


_BERT = _hf("bert-base", "BertConfig", "BertModel")
_RESNET = _hf("resnet50", "ResNetConfig", "ResNetForImageClassification", num_labels=1000)  # defaults: ResNet-50 layers
_GPT2 = _hf("gpt2", "GPT2Config", "GPT2LMHeadModel")
# small causal LMs that generate (``--generate``): GPT-2-style (learned positions, MHA), Llama-style
# (RoPE, GQA with 8 query / 2 key-value heads, SwiGLU) and Qwen2-style (Llama-like with QKV biases)
_GPT2_TINY = _hf("gpt2-tiny", "GPT2Config", "GPT2LMHeadModel", vocab_size=2048, n_positions=1024, n_embd=256,
                 n_layer=4, n_head=4, bos_token_id=2047, eos_token_id=2047)  # GPT-2's 50256 is past this vocabulary
_LLAMA_TINY = _hf("llama-tiny", "LlamaConfig", "LlamaForCausalLM", vocab_size=2048, hidden_size=256,
                  intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                  max_position_embeddings=1024)
_QWEN2_TINY = _hf("qwen2-tiny", "Qwen2Config", "Qwen2ForCausalLM", vocab_size=2048, hidden_size=256,
                  intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                  max_position_embeddings=1024)

ZOO: dict[str, ZooEntry] = {
    e.name: e
    for e in (
        ZooEntry("mlp", "the published MLP benchmark, Linear 1024-2048-2048-1024-10 with ReLU",
                 mlp, "float32[B,1024]", (1, 16, 256), _source_of(mlp, call="mlp()")),
        ZooEntry("cnn", "a small ResNet-style CNN (BatchNorm, dropout) on 3x64x64 images",
                 SmallCNN, "float32[B,3,64,64]", (1, 16), _source_of(_ResBlock, SmallCNN, call="SmallCNN()")),
        ZooEntry("transformer", "a 4-layer d256 pre-norm encoder classifier over 128 tokens",
                 SmallTransformer, "int64[B,128]{0,1000}", (1, 8),
                 _source_of(SmallTransformer, call="SmallTransformer()")),
        ZooEntry("bert-base", "BERT-base encoder (12 layers, d768), hidden states, seq 128 [zoo extra]",
                 _BERT[0], "int64[B,128]{0,30522}", (1, 8), _BERT[1]),
        ZooEntry("resnet50", "ResNet-50 image classifier, 224x224, 1000 logits [zoo extra]",
                 _RESNET[0], "float32[B,3,224,224]", (1, 8), _RESNET[1]),
        ZooEntry("gpt2", "GPT-2 small language model (12 layers, d768), logits, seq 128 [zoo extra]",
                 _GPT2[0], "int64[B,128]{0,50257}", (1, 8), _GPT2[1]),
        ZooEntry("gpt2-tiny", "GPT-2-style causal LM (4 layers, d256, vocab 2048) for --generate [zoo extra]",
                 _GPT2_TINY[0], "int64[B,128]{0,2048}", (1, 8), _GPT2_TINY[1]),
        ZooEntry("llama-tiny", "Llama-style causal LM (4 layers, d256, GQA 8/2, RoPE) for --generate [zoo extra]",
                 _LLAMA_TINY[0], "int64[B,128]{0,2048}", (1, 8), _LLAMA_TINY[1]),
        ZooEntry("qwen2-tiny", "Qwen2-style causal LM (4 layers, d256, GQA, QKV bias) for --generate [zoo extra]",
                 _QWEN2_TINY[0], "int64[B,128]{0,2048}", (1, 8), _QWEN2_TINY[1]),
    )
}
