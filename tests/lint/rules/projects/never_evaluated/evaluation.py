"""Round twenty-six (the PyTorch seq2seq tutorial as a repository): evaluate() is run from a notebook
(nothing here calls evaluate_randomly), and no file of the project ever calls eval(), so the decoder's
dropout is on whoever runs it."""
import torch


def evaluate(decoder, x):  # error: PIT109
    with torch.inference_mode():
        return decoder(x).argmax(-1).tolist()


def evaluate_randomly(decoder, pairs):
    for x in pairs:
        print(evaluate(decoder, x))
