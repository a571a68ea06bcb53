import torch
from translate import translate

print(translate(torch.zeros(1, 4)))
