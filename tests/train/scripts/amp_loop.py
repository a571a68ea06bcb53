"""A plain loop for the fp16 + GradScaler edit: an MLP regression with a learning-rate schedule and
gradient clipping (`--clip norm|value|none`); `--two` trains a second model with its own optimizer
in the same iteration (a GAN's shape: two optimizers, each clipped and stepped in turn)."""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=120)
    parser.add_argument("--clip", choices=("norm", "value", "none"), default="norm")
    parser.add_argument("--two", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=40, gamma=0.5)
    critic = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    data = torch.randn(2048, 32)
    target = data[:, :4].sum(dim=1, keepdim=True)
    for step in range(args.iters):
        i = step * 64 % 2048
        x, y = data[i:i + 64], target[i:i + 64]
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        if args.clip == "norm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        elif args.clip == "value":
            nn.utils.clip_grad_value_(model.parameters(), 0.5)
        optimizer.step()
        schedule.step()
        if args.two:
            critic_opt.zero_grad()
            critic_loss = nn.functional.mse_loss(critic(x), y)
            critic_loss.backward()
            nn.utils.clip_grad_value_(critic.parameters(), 0.5)
            critic_opt.step()
    print(f"final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
