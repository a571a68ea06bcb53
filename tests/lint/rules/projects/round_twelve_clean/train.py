import torch
from torch import nn

from meta import MetaLearner
from utils import TrainState, run_epoch, trunc_normal_

model = nn.Linear(4, 3)
trunc_normal_(model.weight, std=0.02)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(4)]
train_state = TrainState()
for epoch in range(3):
    mean_loss, train_state = run_epoch(batches, model, optimizer, train_state)
    print(epoch, mean_loss)

learner = MetaLearner(nn.Linear(4, 4))
tasks = [[(torch.randn(5, 4), torch.randn(5, 4), torch.randn(5, 4), torch.randn(5, 4)) for _ in range(2)]]
learner.train(tasks)
