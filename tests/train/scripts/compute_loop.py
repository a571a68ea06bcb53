"""A compute-bound plain PyTorch loop: most of its step is float32 matmuls (an MLP 512-2048-2048-10
at batch 128), two parameter groups, the loss computed in the loop. On a CPU with native bfloat16
(avx512_bf16, AMX) bf16 autocast makes its step faster; elsewhere it is emulated and slower."""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 10))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                                  lr=args.lr)
    data = torch.randn(4096, 512)
    labels = data[:, :10].argmax(dim=1)
    for step in range(args.iters):
        i = step * 128 % 4096
        optimizer.zero_grad()
        logits = model(data[i:i + 128])
        loss = nn.functional.cross_entropy(logits, labels[i:i + 128])
        loss.backward()
        optimizer.step()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
