"""Loaders whose workers come from a project class's attribute and from a project module's constant."""
import config
import torch
from config import Config

cfg = Config()


def make(train_data):
    by_class = torch.utils.data.DataLoader(
        train_data, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.loader_workers, pin_memory=True)
    by_module = torch.utils.data.DataLoader(
        train_data, batch_size=cfg.batch_size, shuffle=True, num_workers=config.workers, pin_memory=True)
    return by_class, by_module
