"""A small Hugging Face Trainer script: a BERT classifier built from a config (random weights, no
download), an in-memory dataset, the model's own loss from its `labels` input."""

import sys
import tempfile

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Pairs(torch.utils.data.Dataset):
    def __init__(self, n: int = 512) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 500, (n, 32), generator=g)
        self.labels = (self.ids[:, 0] % 2).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    torch.manual_seed(0)
    config = BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=64, num_labels=2)
    model = BertForSequenceClassification(config)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, max_steps=steps, per_device_train_batch_size=16, use_cpu=True,
                                 report_to=[], save_strategy="no", logging_strategy="no", learning_rate=1e-3,
                                 dataloader_num_workers=0, seed=0)
        result = Trainer(model=model, args=args, train_dataset=Pairs()).train()
    print("done", result.training_loss)
