import torch


def get_accuracy(SR, GT, threshold=0.5):
    SR = SR > threshold
    corr = torch.sum(SR == GT)
    return float(corr) / float(SR.numel())


def get_f1(SR, GT):
    acc = get_accuracy(SR, GT)
    return 2 * acc / (acc + 1e-6)
