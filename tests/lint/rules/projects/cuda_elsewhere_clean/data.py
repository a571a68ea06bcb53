from torch.utils.data import DataLoader


def loaders(train_set, test_set):
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
    test_loader = DataLoader(test_set, batch_size=64)
    return train_loader, test_loader
