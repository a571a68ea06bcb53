"""An object a project factory builds (BertSum's ``trainer = build_trainer(args, model)``, whose
``return trainer`` holds ``Trainer(...)``): its methods are that class's, so a validate-only run's
no_grad is found."""
import torch


def build_trainer(model):
    trainer = Trainer(model)
    return trainer


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self, batches):
        self.model.train()
        for x in batches:
            loss = self.model(x).sum()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    def validate(self, batches):
        self.model.eval()
        total = 0.0
        with torch.no_grad():  # info: PIT202
            for x in batches:
                total += self.model(x).sum().item()
        return total
