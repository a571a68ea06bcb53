from torch.utils.data import DataLoader


def loaders(train_set, val_set):
    train = DataLoader(train_set, batch_size=32, shuffle=True)  # info: PIT401
    val = DataLoader(val_set, batch_size=64)
    fast = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4)
    return train, val, fast


def test_script(train_set, test_set, model):
    train = DataLoader(train_set, batch_size=32, shuffle=True)  # built, never used: no training through it
    test = DataLoader(test_set, batch_size=1)
    return [model(x) for x, _ in test]
