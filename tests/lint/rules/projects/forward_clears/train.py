import torch
from rnn_encoder_decoder import *


def train(batches, vocab, epochs):
    model = rnn_encoder_decoder(vocab)
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        total = 0.0
        for x, y in batches:
            loss = model(x, y)  # forward() does not clear: nothing does
            loss.backward()
            optim.step()  # error: PIT101
            total += loss.item()
        print(total)
