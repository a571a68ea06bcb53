import math

import torch
import transformers


def main(path, pieces):  # error: PIT201
    model = transformers.GPT2LMHeadModel.from_pretrained(path)
    model.eval()
    total_loss, total_steps = 0, 0
    for piece in pieces:
        for batch in piece:
            ids = torch.tensor(batch).long()
            outputs = model.forward(input_ids=ids, labels=ids)
            loss, logits = outputs[:2]
            total_loss += loss  # error: PIT102
            total_steps += 1
    print("perplexity", math.exp(total_loss / total_steps))


if __name__ == "__main__":
    main("gpt2", [[[1, 2, 3]]])
