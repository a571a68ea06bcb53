"""Loaders whose workers come from a project class's attribute and from a project module's constant."""
import config
import torch
from config import Config

cfg = Config()


def make(train_data):
    by_class = torch.utils.data.DataLoader(  # error: PIT401
        train_data, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.loader_workers)
    by_module = torch.utils.data.DataLoader(  # error: PIT401
        train_data, batch_size=cfg.batch_size, shuffle=True, num_workers=config.workers)
    return by_class, by_module
