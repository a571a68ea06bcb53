import torch
from translate import sample, translate

print(translate(torch.zeros(1, 4)), sample(torch.zeros(1, 4)))
