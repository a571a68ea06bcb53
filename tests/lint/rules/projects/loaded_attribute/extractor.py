"""Round twenty-five's development part (deep_sort's Extractor): a tracker's feature extractor builds
its network and loads trained weights in __init__, and __call__ runs it, but nothing puts it in eval
mode, so batch-norm normalises each batch of crops by its own statistics. Another class of the
same file that switches its own network is no reason to stay silent about this one; an nn.Module's own
submodule, and weights copied from another network's state_dict(), are left alone."""
import torch

from model import Net


class Extractor:
    def __init__(self, path):
        self.net = Net()
        self.net.load_state_dict(torch.load(path, weights_only=True))

    def __call__(self, crops):
        with torch.inference_mode():
            features = self.net(crops)  # error: PIT109
        return features.numpy()


class CheckedExtractor:
    def __init__(self, path):
        self.net = Net()
        self.net.load_state_dict(torch.load(path, weights_only=True))
        self.net.eval()

    def __call__(self, crops):
        with torch.inference_mode():
            return self.net(crops).numpy()


class Averaged(torch.nn.Module):
    """A model's own copy (DDPM's EMA, DANN's feature extractor): it follows the model's mode."""

    def __init__(self, path):
        super().__init__()
        self.ema = Net()
        self.ema.load_state_dict(torch.load(path, weights_only=True))

    def forward(self, x):
        return self.ema(x)


class Mirror:
    """Weights copied from another network, not a checkpoint: whoever built that one sets its mode."""

    def __init__(self, other):
        self.net = Net()
        self.net.load_state_dict(other.state_dict())

    def __call__(self, crops):
        with torch.inference_mode():
            return self.net(crops).numpy()
