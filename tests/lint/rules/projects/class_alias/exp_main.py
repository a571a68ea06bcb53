"""A class called through a second name (the Time-Series-Library's ``Exp = Exp_Main``;
``exp = Exp(args)``): its methods are the class's, so a test-only run's no_grad is found."""
import torch


class Exp_Main:
    def __init__(self, args):
        self.model = torch.nn.Linear(4, 2)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self, setting):
        self.model.train()
        for _ in range(3):
            loss = self.model(torch.randn(2, 4)).sum()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    def test(self, setting):
        self.model.eval()
        preds = []
        with torch.no_grad():  # info: PIT202
            preds.append(self.model(torch.randn(2, 4)).numpy())
        return preds
