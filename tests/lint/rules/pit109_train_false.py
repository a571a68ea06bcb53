# m.train(False) puts a model in eval mode as m.eval() does; m.train(True) back in training mode.
import torch


def validate(model, batches):
    with torch.inference_mode():
        return sum(model(b).mean().item() for b in batches)


def test(model, batches):  # error: PIT109
    with torch.inference_mode():
        return sum(model(b).mean().item() for b in batches)


def main(batches, optimizer):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1))
    for b in batches:
        optimizer.zero_grad()
        model(b).sum().backward()
        optimizer.step()
    model.train(False)
    print(validate(model, batches))
    model.train(True)
    print(test(model, batches))
