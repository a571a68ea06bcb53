import torch


def restore(path):
    return torch.load(path)  # torch >= 2.6 loads weights only by default


def restore_anything(path):
    return torch.load(path, weights_only=False)  # error: PIT501


def resume(model, ckpt):
    torch.save(model.state_dict(), ckpt)
    return torch.load(ckpt, weights_only=False)  # the project's own output
