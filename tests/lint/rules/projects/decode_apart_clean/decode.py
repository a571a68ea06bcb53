"""The twin: a self-critical training script trains on the beams' log-probabilities, so the graph is used."""
import torch

from model import load


class BeamSearch:
    def __init__(self, path):
        self.model = load(path).train()

    def beam_search(self, batch):
        out, _ = self.model.encoder(batch)
        return self.model.decoder(out).log_softmax(-1).max(-1).values


def train(path, batches):
    searcher = BeamSearch(path)
    optimizer = torch.optim.Adam(searcher.model.parameters())
    for batch in batches:
        loss = -searcher.beam_search(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
