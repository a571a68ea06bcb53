import torch


def evaluate(model, loader):  # error: PIT201
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).sum().item()
    return correct


@torch.inference_mode()
def predict(model, x):
    model.eval()
    return model(x)


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return [model(x) for x, _ in loader]


def train(model, loader, val_loader, opt, crit):  # error: PIT201
    for x, y in loader:
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
    model.eval()
    for x, y in val_loader:
        print(crit(model(x), y))
    model.train()


def sample_images(generator, z):  # error: PIT201
    gen = generator(z)  # used for backward nowhere: a picture is saved
    save_image(gen.data, "sample.png")


def training_step(generator, discriminator, z, opt):
    opt.zero_grad()
    fake = generator(z)
    loss = -discriminator(fake).mean()
    loss.backward()
    opt.step()
    return loss


def embed(encoder, x):
    return encoder(x)  # returned: the caller decides


def save_image(t, path):
    return t, path
