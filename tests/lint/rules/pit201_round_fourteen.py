"""Round fourteen's shapes: a model known by its .parameters() going to an optimizer, whatever built
it (Nest-of-UNets' model_test = model_unet(...)); a call named like save_updated_image() is no update
step that trains on what it is given (V-Net's inference)."""
import torch
import utils
from models import U_Net, model_unet

model_test = model_unet(U_Net, 3, 1)
opt = torch.optim.Adam(model_test.parameters(), lr=1e-3)
train_loader = [(torch.randn(2, 3, 8, 8), torch.rand(2, 1, 8, 8)) for _ in range(3)]
for epoch in range(2):
    model_test.train()
    for x, y in train_loader:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model_test(x), y)
        loss.backward()
        opt.step()
    model_test.eval()
    torch.no_grad()  # a bare call: a context manager made and dropped, autograd stays on
    valid_loss = 0.0
    for x1, y1 in train_loader:
        y_pred1 = model_test(x1)  # error: PIT201
        valid_loss += torch.nn.functional.binary_cross_entropy_with_logits(y_pred1, y1).item()

for x in [torch.randn(1, 3, 8, 8)]:
    output = model_test(x)  # error: PIT201
    _, output = output.max(1)
    utils.save_updated_image(output.numpy(), "out.mhd")
