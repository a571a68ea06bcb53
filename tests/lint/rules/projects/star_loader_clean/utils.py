import torch
from torch_geometric.data import InMemoryDataset


class Molecules(InMemoryDataset):
    pass


class DataLoader:
    """The project's own loader: not torch's (its batches are built elsewhere)."""

    def __init__(self, data, batch_size, shuffle=False):
        self.data, self.batch_size, self.shuffle = data, batch_size, shuffle
