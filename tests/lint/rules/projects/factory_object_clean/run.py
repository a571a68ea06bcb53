import torch
from trainer import build_trainer

model = torch.nn.Linear(4, 2)
batches = [torch.randn(2, 4) for _ in range(3)]
trainer = build_trainer(model)
for epoch in range(2):
    trainer.train(batches)
    print(trainer.validate(batches))
