# One loop over the splits runs the forward for each; the backward only for the training split. The
# validation split's forwards build graphs nothing uses unless autograd follows the phase.
import torch


def run(model, loaders, optimizer, criterion, epochs, test=False):
    splits = ["train", "valid"] + (["test"] if test else [])
    for _ in range(epochs):
        for split in splits:
            if split == "train":
                model.train()
            else:
                model.eval()
            for x, y in loaders[split]:
                out = model(x)  # warning: PIT201
                loss = criterion(out, y)
                if split == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()


def run_as_the_tutorial_does(model, loaders, optimizer, criterion):
    for phase in ["train", "val"]:
        model.train() if phase == "train" else model.eval()
        for x, y in loaders[phase]:
            optimizer.zero_grad()
            with torch.set_grad_enabled(phase == "train"):
                loss = criterion(model(x), y)
                if phase == "train":
                    loss.backward()
                    optimizer.step()


def train_only_splits(model, loaders, optimizer, criterion):
    for split in ("train", "train_extra"):
        for x, y in loaders[split]:
            loss = criterion(model(x), y)
            if split == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            else:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
