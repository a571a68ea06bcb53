import torch


def serve(model, batch, path):
    model.load_state_dict(torch.load(path))
    with torch.no_grad():
        return model(batch)
