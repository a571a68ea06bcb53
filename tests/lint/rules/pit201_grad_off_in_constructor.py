# An inferer turns autograd off for the whole process in its constructor and never back on: its
# forwards record nothing (a file that trains, or that turns autograd back on, is judged as usual).
import torch


class Inferer:
    def __init__(self, model):
        self.model = model
        self.model.eval()
        torch.autograd.set_grad_enabled(False)

    def predict(self, x):
        out = self.model(x)
        print(out.argmax(-1).tolist())


if __name__ == "__main__":
    inferer = Inferer(torch.nn.Linear(4, 2))
    inferer.predict(torch.randn(1, 4))
