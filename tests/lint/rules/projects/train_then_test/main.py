import torch

from model import SessionModel, train_test


def batches(n):
    return [(torch.randint(0, 100, (8, 5)), torch.randint(0, 100, (8,))) for _ in range(n)]


model = SessionModel()
for epoch in range(3):
    print(train_test(model, batches(20), batches(5)))
