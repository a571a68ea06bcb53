import torch


def serve(model, batch):
    with torch.no_grad():  # info: PIT202
        return model(batch)


@torch.no_grad()  # info: PIT202
def embed(model, batch):
    return model(batch)


def already(model, batch):
    with torch.inference_mode():
        return model(batch)


def load_pretrained(model, weights):
    with torch.no_grad():  # copying weights in: not inference, inference_mode would be wrong
        for p, w in zip(model.parameters(), weights):
            p.copy_(w)


@torch.no_grad()
def init_weights(module):
    torch.nn.init.normal_(module.weight, std=0.02)
