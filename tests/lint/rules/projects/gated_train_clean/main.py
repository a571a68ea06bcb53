from model import CharModel


def generate(model, start, steps):
    model.eval()
    x = start
    for _ in range(steps):
        x = model.train((x, None), adjust=False)
    return x


def main(batches, vocab, opt_factory, crit, start):
    model = CharModel(vocab, opt_factory, crit)
    for data in batches:
        model.train(data)
    return generate(model, start, 100)
