# Calls that build a model rather than run one: a torchvision factory, and a factory from elsewhere whose
# result is then loaded and switched to eval (a forward's output has no load_state_dict). A model's
# own forward is the model: its sub-forwards make its output, whatever the flow inside can show.
import torch
import torch.nn as nn
from backbones import resnet34  # a factory from a package the linter does not read
from torchvision.models import resnet18


class Flow(nn.Module):
    def __init__(self):
        super().__init__()
        self.fnet = nn.Linear(4, 4)
        self.update = nn.Linear(4, 4)

    def forward(self, x, iters=3):
        feats = self.fnet(x)
        table = {"feats": feats}
        state = torch.zeros_like(x)
        outs = []
        for _ in range(iters):
            state = state.detach()
            state = state + self.update(state)
            outs.append(state)
        print(sorted(table))
        return outs


if __name__ == "__main__":
    backbone = resnet18(weights=None)
    backbone.eval()
    backbone.layer1.register_forward_hook(print)
    net = resnet34()
    net.load_state_dict(torch.load("weights.pt", weights_only=True))
    net.eval()
