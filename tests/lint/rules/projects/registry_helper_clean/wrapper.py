import torch
from helpers import HELPERS


class Wrapper:
    def __init__(self, task):
        self.model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.1))
        self.task_helper = HELPERS[task](self)

    def evaluate(self, batches):
        self.model.eval()
        preds = []
        for batch in batches:
            with torch.inference_mode():
                preds += self.task_helper.eval_step(batch)
        return preds


if __name__ == "__main__":
    print(Wrapper("choice").evaluate([torch.randn(2, 4)]))
