"""A loss module named with a suffix (``criterion_d``, ``criterionGAN``) is a loss, not a model: run on
outputs made under no_grad it records nothing (GLPDepth's validation). A model's forward left outside
the no_grad block is still found."""
import torch
import torch.nn as nn


class SiLogLoss(nn.Module):
    def forward(self, pred, target):
        d = torch.log(pred) - torch.log(target)
        return torch.sqrt((d ** 2).mean() - 0.85 * d.mean() ** 2)


def validate(val_loader, model, criterion_d):
    model.eval()
    total = 0.0
    for image, depth in val_loader:
        with torch.no_grad():
            preds = model(image)
        loss_d = criterion_d(preds.squeeze(), depth.squeeze())
        total += loss_d.item()
    return total


def validate_outside(val_loader, model, criterionGAN):  # error: PIT201
    model.eval()
    total = 0.0
    for image, depth in val_loader:
        preds = model(image)
        total += criterionGAN(preds, depth).item()
    return total


def main(train_loader, val_loader, model, opt):
    criterion_d = SiLogLoss()
    for image, depth in train_loader:
        loss = criterion_d(model(image), depth)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(validate(val_loader, model, criterion_d), validate_outside(val_loader, model, criterion_d))
