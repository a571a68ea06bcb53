import torch.nn as nn


class rnn_encoder_decoder(nn.Module):  # a lowercase class, imported with *: building it is not a forward
    def __init__(self, vocab):
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.out = nn.Linear(16, vocab)

    def forward(self, x, y):
        self.zero_grad()  # the model clears its own gradients before every training forward
        return nn.functional.cross_entropy(self.out(self.embed(x)).flatten(0, 1), y.flatten())
