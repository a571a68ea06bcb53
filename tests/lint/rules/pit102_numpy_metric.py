"""PIT102: a metric helper whose return is what numpy makes of the prediction (``np.float(correct) /
(target.size(0) * target.size(1))``, NRI's edge accuracy) is a number, so a list of them keeps no
graph; the loss appended beside it does."""
import math

import numpy as np
import torch.nn.functional as F


def edge_accuracy(preds, target):
    _, preds = preds.max(-1)
    correct = preds.float().data.eq(target.float().data.view_as(preds)).cpu().sum()
    return np.float64(correct) / (target.size(0) * target.size(1))


def train(encoder, optimizer, loader, acc_train, loss_train):
    for data, relations in loader:
        optimizer.zero_grad()
        logits = encoder(data)
        loss = F.cross_entropy(logits.view(-1, 2), relations.view(-1))
        acc = edge_accuracy(logits, relations)
        acc_train.append(acc)
        loss_train.append(loss)  # error: PIT102
        loss.backward()
        optimizer.step()


def squared_log_error(prediction, target):
    """SimGNN's calculate_loss: math.log of a one-element tensor is a Python float."""
    prediction = -math.log(prediction)
    target = -math.log(target)
    return (prediction - target) ** 2


def train_scores(model, optimizer, pairs, scores, losses):
    for data, target in pairs:
        optimizer.zero_grad()
        prediction = model(data)
        loss = F.mse_loss(prediction, target)
        scores.append(squared_log_error(prediction, target))  # a float: no graph kept
        losses.append(loss)  # error: PIT102
        loss.backward()
        optimizer.step()


def train_segmentation(model, optimizer, loader, criterion):
    """Round twenty-five (LiTS): a Dice score of one_hot(argmax(output)) is made of integers, no graph."""
    dsc_epoch, loss_epoch = 0, 0
    for x, y in loader:
        optimizer.zero_grad()
        output = model(x)
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
        pred_seg = F.one_hot(output.argmax(dim=1), 3).permute(0, 3, 1, 2)
        dsc = (2 * (pred_seg * y).sum() + 1e-8) / (pred_seg.sum() + y.sum() + 1e-8)
        dsc_epoch += dsc
        loss_epoch += loss  # error: PIT102
    return dsc_epoch, loss_epoch
