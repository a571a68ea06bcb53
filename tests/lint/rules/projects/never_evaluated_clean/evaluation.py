"""The twin: the training script switches the decoder to eval() after training, so the notebook's call
of evaluate() may well come after it: its mode is not known here."""
import torch


def evaluate(decoder, x):
    with torch.inference_mode():
        return decoder(x).argmax(-1).tolist()


def evaluate_randomly(decoder, pairs):
    for x in pairs:
        print(evaluate(decoder, x))
