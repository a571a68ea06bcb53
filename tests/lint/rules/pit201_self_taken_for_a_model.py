"""A trainer class (no nn.Module) whose own load_state_dict() method is called with a path named
like a model (`trainer.load_state_dict(load_model)`): that argument is its first parameter after
`self`, not `self`, so `self` is no model and `self.model(x)` in predict() is the model's forward
(Char-RNN's CharRNNTrainer.predict)."""
import torch
from torch import nn


class CharRNN(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed, self.rnn = nn.Embedding(vocab, 16), nn.GRU(16, vocab, batch_first=True)

    def forward(self, x, state=None):
        return self.rnn(self.embed(x), state)


def get_model(vocab):
    model = CharRNN(vocab)
    if torch.cuda.is_available():
        model = model.cuda()
    return model


class CharTrainer:
    def __init__(self, vocab):
        self.model = get_model(vocab)

    def load_state_dict(self, path):
        self.model.load_state_dict(torch.load(path, weights_only=True))

    def predict(self, x, n):  # info: PIT201
        self.model.eval()
        out, state = self.model(x)
        chars = []
        for _ in range(n):
            out, state = self.model(out.argmax(-1), state)
            chars.append(int(out.argmax()))
        return chars


def run(vocab, x, load_model="char_rnn.pt"):
    trainer = CharTrainer(vocab)
    trainer.load_state_dict(load_model)
    return trainer.predict(x, 20)
