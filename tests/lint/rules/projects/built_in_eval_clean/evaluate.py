# An evaluator whose constructor builds its model in eval mode (a summarizer's Evaluate(path)
# building Model(path, is_eval=True)) evaluates in eval mode.
import sys

import torch
from model import Model


class Evaluate:
    def __init__(self, path):
        self.model = Model(path, is_eval=True)

    def eval_one_batch(self, batch):
        with torch.inference_mode():
            return self.model.encoder(batch).mean().item()

    def run_eval(self, batches):
        return [self.eval_one_batch(b) for b in batches]


if __name__ == "__main__":
    evaluator = Evaluate(sys.argv[1])
    print(evaluator.run_eval([torch.randn(2, 4)]))
