import torch

from model import load_model


def predict(path, batches):  # error: PIT109
    model = load_model(path)  # which no longer calls eval()
    with torch.inference_mode():
        return [model(x).argmax(1).tolist() for x in batches]


print(predict("tagger.pt", [torch.randn(2, 16)]))
