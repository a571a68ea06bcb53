"""The loader takes its workers from the command line (DLRM's ``args.num_workers``)."""
import torch


def make_loaders(args, train_data, test_data):
    train_loader = torch.utils.data.DataLoader(
        train_data, batch_size=args.batch_size, shuffle=False, num_workers=args.num_workers, pin_memory=True)
    test_loader = torch.utils.data.DataLoader(test_data, batch_size=args.batch_size, num_workers=args.num_workers)
    return train_loader, test_loader
