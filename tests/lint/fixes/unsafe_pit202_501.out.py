import torch


def serve(model, batch, path):
    model.load_state_dict(torch.load(path, weights_only=True))
    with torch.inference_mode():
        return model(batch)
