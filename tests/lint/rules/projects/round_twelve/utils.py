import torch


def first(var):
    return var.view(-1)[0]  # still the tensor: its graph comes along


def run_epoch(batches, model, optimizer, h):
    total = 0.0
    for x, y in batches:
        out, h = model(x, h)  # error: PIT103
        loss = torch.nn.functional.mse_loss(out, y)
        optimizer.zero_grad()
        loss.backward(retain_graph=True)  # error: PIT103
        optimizer.step()
        total += first(loss)  # error: PIT102
    return total, h
