import numpy as np
import torch

from model import Tagger, accuracy, eval_metrics, valid_accuracy

model = Tagger()
optimizer = torch.optim.Adam(model.parameters())
batches = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(4)]
model.train()  # once: valid_accuracy() evaluates a copy of its own
for epoch in range(3):
    totals = np.zeros(1)
    for x, y in batches:
        optimizer.zero_grad()
        out = model(x)
        torch.nn.functional.cross_entropy(out, y).backward()
        optimizer.step()
        totals += eval_metrics([accuracy], out, y)
    torch.save(model.state_dict(), "tagger.pt")
    print(totals, valid_accuracy("tagger.pt", batches))
