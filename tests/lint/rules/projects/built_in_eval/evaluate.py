# An evaluator whose model stays in training mode: its evaluation runs dropout.
import sys

import torch
from model import Model


class Evaluate:
    def __init__(self, path):
        self.model = Model(path)

    def eval_one_batch(self, batch):  # error: PIT109
        with torch.inference_mode():
            return self.model.encoder(batch).mean().item()

    def run_eval(self, batches):
        return [self.eval_one_batch(b) for b in batches]


if __name__ == "__main__":
    evaluator = Evaluate(sys.argv[1])
    print(evaluator.run_eval([torch.randn(2, 4)]))
