import torch


def get_model(train=True):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1))
    model.train()
    return model
