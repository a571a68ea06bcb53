"""losses.update(loss, n) keeps every step's graph in the meter's running sum (pt.seq2seq); the accuracy,
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
        losses.update(loss, x.size(0))  # error: PIT102
        top1.update(accuracy(out, y), x.size(0))
    return losses.avg


def train_captions(decoder, loader, optimizer):
    """Round twenty-six (show-attend-tell): the count handed with a number is the decode lengths the
    model returns beside its scores, a list of ints: ``n`` is a count (``self.count += n``), no graph."""
    losses = utils.AverageMeter()
    for x, y in loader:
        scores, decode_lengths = decoder(x)
        loss = criterion(scores, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), sum(decode_lengths))
    return losses.avg


def criterion(logits, targets):
    losses = torch.nn.functional.cross_entropy(logits, targets, reduction="none")  # `losses` again, built last: the
    # file-wide record of what built a name says cross_entropy; the one update() of the project decides
    return losses.mean()
