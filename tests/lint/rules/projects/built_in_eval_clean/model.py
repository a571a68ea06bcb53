import torch


class Model:
    def __init__(self, path=None, is_eval=False):
        self.encoder = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1))
        if path is not None:
            self.encoder.load_state_dict(torch.load(path, weights_only=True))
        if is_eval:
            self.encoder = self.encoder.eval()
