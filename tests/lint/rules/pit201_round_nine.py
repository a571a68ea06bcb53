"""PIT201 shapes from issue 48's ninth round: a loop that sets ``requires_grad = True`` unfreezes the
model (its forwards still record), and a second name for a built model (``single_mt = mt``) runs
its forward as the model does; a loop that sets ``requires_grad = False`` still freezes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MusicTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


mt = MusicTransformer()
single_mt = mt
mt = nn.DataParallel(mt)
optimizer = torch.optim.Adam(mt.parameters())
teacher = MusicTransformer()
for p in teacher.parameters():
    p.requires_grad = False
for p in mt.parameters():
    p.requires_grad = True

for step in range(100):
    x = torch.randn(4, 8)
    optimizer.zero_grad()
    loss = F.mse_loss(mt(x), teacher(x))
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        single_mt.eval()
        prediction = single_mt.forward(torch.randn(2, 8))  # warning: PIT201
        print(prediction.detach().cpu().numpy().mean())
        single_mt.train()

segmenter = MusicTransformer()
for param in segmenter.parameters():
    param.requires_grad = True  # unfrozen: its forward below records a graph
val = segmenter(torch.randn(2, 8))  # warning: PIT201
print(val.detach().cpu().numpy())
