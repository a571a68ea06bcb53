"""Small models (and a metric) for the int8 / fidelity / metric tests, loaded as file specs
(``f"{QUANT_MODELS}:gru_classifier"``) so that worker processes rebuild them."""

import torch
from torch import nn


class GRUClassifier(nn.Module):
    """Token ids -> 4 class scores through a 2-layer GRU."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.gru = nn.GRU(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.embed(tokens))  # (B, T, 32)
        return self.head(hidden[:, -1])


def gru_classifier():
    return GRUClassifier(), torch.randint(0, 100, (8, 12))


def _seeded(module: nn.Module) -> nn.Module:
    """Weights fixed by a generator of their own (the metric rebuilds the very same model)."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) / p.shape[-1] ** 0.5)
    return module


def near_tie():
    """Two logits that differ by 1e-4 of their size: int8 error flips most argmaxes, but every
    flip is between near-tied logits."""
    head = _seeded(nn.Linear(16, 2))
    with torch.no_grad():
        head.weight[1] = head.weight[0] * (1 + 1e-4)
        head.bias.zero_()
    return nn.Sequential(head), torch.randn(8, 16)  # quantize_dynamic swaps children, not the root


def mlp():
    return _seeded(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))), torch.randn(8, 16)


def accuracy(model) -> float:
    """The share of 512 fixed inputs whose class matches the fp32 model's (the task's labels)."""
    x = torch.randn(512, 16, generator=torch.Generator().manual_seed(1))
    reference, _ = mlp()
    labels = reference.eval()(x).argmax(-1)
    return float((model(x).argmax(-1) == labels).float().mean())


def not_a_metric(model) -> float:
    raise RuntimeError("this metric is broken")
