"""A loop whose data comes from NumPy's default_rng() without a seed (OS entropy): no seed that
pitstop sets reaches it, so two runs of the unmodified script differ from the first step."""

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
rng = np.random.default_rng()
for _step in range(300):
    x = torch.from_numpy(rng.standard_normal((32, 32), dtype=np.float32))
    y = x[:, :4].argmax(dim=1)
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
