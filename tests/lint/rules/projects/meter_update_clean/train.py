"""losses.update(loss.item(), n): a number in the meter; the accuracy,
computed under no_grad, holds none."""
import torch
import utils


def accuracy(output, target):
    with torch.no_grad():
        return (output.argmax(1) == target).float().mean() * 100


def train(model, loader, optimizer):
    losses = utils.AverageMeter()
    top1 = utils.AverageMeter()
    for x, y in loader:
        out = model(x)
        loss = criterion(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
        top1.update(accuracy(out, y), x.size(0))
    return losses.avg


def criterion(logits, targets):
    losses = torch.nn.functional.cross_entropy(logits, targets, reduction="none")  # `losses` again, built last: the
    # file-wide record of what built a name says cross_entropy; the one update() of the project decides
    return losses.mean()
