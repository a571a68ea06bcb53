import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def forward(block, x, path):
    y = checkpoint(block, x, use_reentrant=False)
    z = checkpoint(
        block,
        y, use_reentrant=False,  # trailing comma kept
    )
    state = torch.load(path, map_location="cpu")
    a = torch.logsumexp(z, dim=-1, keepdim=True)
    b = torch.log_softmax(z, dim=-1)  # stable now
    c = torch.nn.functional.logsigmoid(z) + torch.nn.functional.logsigmoid(-(z))
    return a, b, c, state
