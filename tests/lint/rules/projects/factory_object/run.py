import sys

import torch
from trainer import build_trainer

model = torch.nn.Linear(4, 2)
batches = [torch.randn(2, 4) for _ in range(3)]
if sys.argv[1:] == ["validate"]:
    trainer = build_trainer(model)
    print(trainer.validate(batches))
else:
    trainer = build_trainer(model)
    trainer.train(batches)
