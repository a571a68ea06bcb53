"""A small Lightning script: the LightningModule builds its optimizer, the Trainer runs the loop."""

import sys

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    L.seed_everything(0)
    x = torch.randn(2048, 32)
    data = TensorDataset(x, x[:, :4].argmax(dim=1))
    trainer = L.Trainer(max_steps=steps, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Classifier(), DataLoader(data, batch_size=32, shuffle=True))
    print("done", float(trainer.callback_metrics["train_loss"]))
