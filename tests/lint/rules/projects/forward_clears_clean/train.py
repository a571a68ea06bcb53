import torch
from rnn_encoder_decoder import *


def train(batches, vocab, epochs):
    model = rnn_encoder_decoder(vocab)
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        total = 0.0
        for x, y in batches:
            loss = model(x, y)  # forward() calls self.zero_grad() first
            loss.backward()
            optim.step()
            total += loss.item()
        print(total)
