# A function that trains or evaluates by a mode parameter whose default is an enum member (NeuralClassifier's
# ClassificationTrainer.run): the backward only under ``mode == ModeType.TRAIN``; a caller that leaves the
# mode at its default evaluates, with autograd on.

class ModeType:
    TRAIN = "train"
    EVAL = "eval"


class Trainer:
    def __init__(self, loss_fn):
        self.loss_fn = loss_fn

    def train(self, loader, model, optimizer):
        model.train()
        return self.run(loader, model, optimizer, ModeType.TRAIN)

    def eval(self, loader, model, optimizer):
        model.eval()
        return self.run(loader, model, optimizer)

    def run(self, loader, model, optimizer, mode=ModeType.EVAL):
        total = 0.0
        for x, y in loader:
            logits = model(x)  # warning: PIT201
            loss = self.loss_fn(logits, y)
            if mode == ModeType.TRAIN:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                continue
            total += loss.item()
        return total


class TrainerModeGiven:
    def __init__(self, loss_fn):
        self.loss_fn = loss_fn

    def fit(self, loader, model, optimizer, mode):
        return self.run(loader, model, optimizer, mode)  # a mode the syntax does not tell: no finding

    def run(self, loader, model, optimizer, mode=ModeType.EVAL):
        total = 0.0
        for x, y in loader:
            loss = self.loss_fn(model(x), y)
            if mode == ModeType.TRAIN:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
        return total

