"""Models with the conventions real training code uses (importable by worker processes as file
specs): keyword inputs and the model's own loss (a transformers-like ``.loss``, nanoGPT's
``(logits, loss)``), parameter groups, a loss function defined here, sequence-first batches."""

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Output:
    """Like a transformers ``ModelOutput``: the loss when labels were given, and the logits."""

    loss: torch.Tensor | None
    logits: torch.Tensor


class KeywordLM(nn.Module):
    """``model(input_ids=..., labels=...)`` -> ``Output(loss, logits)``, as HF language models do."""

    def __init__(self, vocab: int = 50) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.head = nn.Embedding(vocab, 32), nn.Linear(32, vocab)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> Output:
        logits = self.head(torch.relu(self.embed(input_ids)))
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten()) if labels is not None else None
        return Output(loss, logits)


class TupleLM(nn.Module):
    """nanoGPT's convention: ``model(x, y)`` -> ``(logits, loss)``."""

    def __init__(self, vocab: int = 50) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.norm, self.head = nn.Embedding(vocab, 32), nn.LayerNorm(32), nn.Linear(32, vocab)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.head(self.norm(self.embed(x)))
        return logits, nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())

    def configure_optimizers(self, weight_decay: float, lr: float) -> torch.optim.Optimizer:
        """nanoGPT's decay / no-decay parameter groups."""
        decay = [p for p in self.parameters() if p.dim() >= 2]
        other = [p for p in self.parameters() if p.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": other, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))


def smooth_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """A loss function defined in the model file (the recipe imports it from here by path)."""
    return nn.functional.cross_entropy(output, target, label_smoothing=0.1)


def keyword_lm():
    """(model, inputs): keyword inputs, the labels among them: the model's own loss."""
    ids = torch.randint(0, 50, (8, 16), generator=torch.Generator().manual_seed(0))
    return KeywordLM(), {"input_ids": ids, "labels": ids}


def tuple_lm():
    """(model, inputs, target, loss_fn, optimizer): nanoGPT's (logits, loss) and its parameter groups."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randint(0, 50, (8, 16), generator=g), torch.randint(0, 50, (8, 16), generator=g)
    return TupleLM(), (x, y), None, None, lambda model: model.configure_optimizers(0.1, 3e-3)


def classifier_with_own_loss_fn():
    """(model, inputs, target, loss_fn, optimizer) with a loss function defined in this file."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    x = torch.randn(16, 16)
    return model, (x,), x[:, :4].argmax(dim=1), smooth_loss, lambda params: torch.optim.SGD(params, lr=0.1)


class SeqFirst(nn.Module):
    """An LSTM tagger on (time, batch) inputs: the batch is dimension 1."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.rnn, self.head = nn.Embedding(30, 16), nn.LSTM(16, 32), nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(x))
        return self.head(out)  # (time, batch, classes)


def seq_loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of (time, batch, classes) against (time, batch)."""
    return nn.functional.cross_entropy(output.flatten(0, 1), target.flatten())


def logits_only():
    """A classifier with no loss of its own (its output is logits)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 4))
