"""PIT109: this module's top level loads the model and puts it in eval mode at import, so
translate() runs in eval mode whoever calls it; sample() reads a model nothing switched."""
import torch
import torch.nn as nn


class Translator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.fc(x))


model = Translator()
model.load_state_dict(torch.load("model.pt", weights_only=True))
model.eval()
sampler = Translator()


def translate(x):
    with torch.inference_mode():
        return model(x)


def sample(x):  # warning: PIT109
    with torch.inference_mode():
        return sampler(x)
