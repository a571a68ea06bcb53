import torch
from torch_geometric.data import DataLoader, InMemoryDataset


class Molecules(InMemoryDataset):
    pass
