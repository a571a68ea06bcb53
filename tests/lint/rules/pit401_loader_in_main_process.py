import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset


def loaders(train_set, val_set):
    train = DataLoader(train_set, batch_size=32, shuffle=True)  # info: PIT401
    val = DataLoader(val_set, batch_size=64)
    fast = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4)
    return train, val, fast


def test_script(train_set, test_set, model):
    train = DataLoader(train_set, batch_size=32, shuffle=True)  # built, never used: no training through it
    test = DataLoader(test_set, batch_size=1)
    return [model(x) for x, _ in test]


def evaluation_loaders(dataset, datasets, transforms):
    mnist = datasets.MNIST(root="./data", train=False, download=True, transform=transforms.ToTensor())
    shown = DataLoader(dataset=mnist, batch_size=64, shuffle=True)  # train=False: shuffled only for display
    sampler = SequentialSampler(dataset)
    predict = DataLoader(dataset, sampler=sampler, batch_size=32)  # a sequential sampler: inference order
    sampled = DataLoader(dataset, sampler=RandomSampler(dataset), batch_size=32)  # info: PIT401
    return shown, predict, sampled


def episodes(dataset, sampler):
    # round twenty-five (ProtoNet): an episodic batch sampler draws training episodes
    return DataLoader(dataset, batch_sampler=sampler, num_workers=0)  # info: PIT401


@torch.inference_mode()
def evaluate(model, dataset, batch_size=50):
    loader = DataLoader(dataset, shuffle=True, batch_size=batch_size)  # built to evaluate: shuffled for sampling
    return [model(x) for x, _ in loader]


def gpu_tensor_loaders(X, Y, arrays, device):
    TensorFloat = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
    X, Y = TensorFloat(X), TensorFloat(Y)
    on_gpu = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)  # CUDA tensors: nothing to load or pin
    x_train = torch.as_tensor(arrays[0]).to(device)
    y_train = torch.as_tensor(arrays[1]).to(device)
    moved = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True)
    x_host = torch.as_tensor(arrays[0])
    on_host = DataLoader(TensorDataset(x_host, y_train), batch_size=64, shuffle=True)  # info: PIT401
    return on_gpu, moved, on_host


def unpacked_keywords(args, train_set, datasets):
    # fast-neural-style: the keywords come from a dict built per branch; every branch leaves the workers at 0
    if args.cuda:
        kwargs = {"num_workers": 0, "pin_memory": False}
    else:
        kwargs = {}
    images = datasets.ImageFolder(args.dataset)
    loader = DataLoader(images, batch_size=args.batch_size, shuffle=True, **kwargs)  # info: PIT401
    # pytorch/examples' MNIST: workers only where a GPU is (the CPU way in the main process is a choice)
    extra = {"num_workers": 1, "pin_memory": True} if args.cuda else {}
    mnist = DataLoader(train_set, batch_size=64, shuffle=True, **extra)
    opts = {"batch_size": 64}
    opts.update({"num_workers": 4})  # changed in place: not followed
    other = DataLoader(train_set, shuffle=True, **opts)
    return loader, mnist, other


def handed_keywords(train_set, **kwargs):
    return DataLoader(train_set, shuffle=True, **kwargs)  # the caller's keywords: not known here


if __name__ == "__main__":
    # round twenty-six (a VAE's dataset module): a shape check of the dataset, in a file that trains nothing
    check = DataLoader(TensorDataset(torch.zeros(8, 2)), batch_size=4, shuffle=True, num_workers=0)
    print(next(iter(check))[0].shape)
