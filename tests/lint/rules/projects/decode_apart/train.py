from data import create_dataset
from registry import build

trainer = build("summarizer")
for batch in create_dataset({"phase": "train"}):
    trainer.optimize(batch)
