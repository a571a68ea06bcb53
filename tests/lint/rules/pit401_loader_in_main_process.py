from torch.utils.data import DataLoader


def loaders(train_set, val_set):
    train = DataLoader(train_set, batch_size=32, shuffle=True)  # info: PIT401
    val = DataLoader(val_set, batch_size=64)
    fast = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4)
    return train, val, fast
