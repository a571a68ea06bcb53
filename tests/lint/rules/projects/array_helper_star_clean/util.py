USE_CUDA = False


def to_numpy(var):
    return var.cpu().data.numpy() if USE_CUDA else var.data.numpy()
