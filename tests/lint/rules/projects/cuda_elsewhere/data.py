from torch.utils.data import DataLoader


def loaders(train_set, test_set):
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)  # error: PIT401
    test_loader = DataLoader(test_set, batch_size=64, shuffle=True)  # a test loader, shuffled or not
    return train_loader, test_loader
