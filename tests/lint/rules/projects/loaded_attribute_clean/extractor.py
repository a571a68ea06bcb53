"""The twin: the extractor switches its network to eval mode after loading."""
import torch

from model import Net


class Extractor:
    def __init__(self, path):
        self.net = Net()
        self.net.load_state_dict(torch.load(path, weights_only=True))
        self.net.eval()

    def __call__(self, crops):
        with torch.inference_mode():
            features = self.net(crops)
        return features.numpy()
