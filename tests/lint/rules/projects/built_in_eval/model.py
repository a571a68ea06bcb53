import torch


class Model:
    def __init__(self, path=None):
        self.encoder = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1))
        if path is not None:
            self.encoder.load_state_dict(torch.load(path, weights_only=True))
