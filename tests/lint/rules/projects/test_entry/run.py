import sys

import torch

from exp import Experiment

batches = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(3)]
exp = Experiment()
if "--train" in sys.argv:
    for run in range(2):
        exp.train(batches)
        exp.test(batches)  # after each run's training: the value is dropped
else:
    exp.test(batches)  # a test-only run: the entry point apart from training
