import torch.nn.functional as F


def cal_loss(pred, gold):
    return F.cross_entropy(pred, gold)


def cal_performance(pred, gold):
    loss = cal_loss(pred, gold)  # the graph comes from another project function
    n_correct = pred.argmax(1).eq(gold).sum().item()
    n_word = gold.numel()
    return loss, n_correct, n_word
