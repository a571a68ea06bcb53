import numpy as np
import torch
from torch import nn


class SessionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(100, 16)
        self.drop = nn.Dropout(0.2)
        self.loss_function = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.parameters())

    def forward(self, items):
        return self.drop(self.embedding(items))

    def compute_scores(self, hidden):
        return hidden.mean(1) @ self.embedding.weight.t()


def forward(model, batch):
    items, targets = batch
    hidden = model(items)
    get = lambda i: hidden[i]  # noqa: E731  (the model's output reached through a closure)
    seq_hidden = torch.stack([get(i) for i in range(len(items))])
    return targets, model.compute_scores(seq_hidden)


def train_test(model, train_batches, test_batches):  # error: PIT201
    model.train()
    total_loss = 0.0
    for batch in train_batches:
        model.optimizer.zero_grad()
        targets, scores = forward(model, batch)
        loss = model.loss_function(scores, targets)
        loss.backward()
        model.optimizer.step()
        total_loss += loss  # error: PIT102
    print(f"loss {float(total_loss):.3f}")
    model.eval()
    hits = []
    for batch in test_batches:
        targets, scores = forward(model, batch)  # (the finding names this line)
        top = scores.topk(20)[1].detach().numpy()
        hits.extend(np.isin(t, s) for t, s in zip(targets.numpy(), top))
    return float(np.mean(hits))
