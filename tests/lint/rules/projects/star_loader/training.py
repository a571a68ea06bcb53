import torch
from utils import *


def train(model, loader, optimizer, device):
    model.train()
    for data in loader:
        data = data.to(device)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(data), data.y).backward()
        optimizer.step()


if __name__ == "__main__":
    train_data = Molecules("data")
    train_loader = DataLoader(train_data, batch_size=512, shuffle=True)  # error: PIT401
    model = torch.nn.Linear(8, 1).to("cuda")
    train(model, train_loader, torch.optim.Adam(model.parameters()), "cuda")
