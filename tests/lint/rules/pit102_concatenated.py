# Model outputs concatenated onto a tensor the loop carries keep every batch's graph: in training,
# and in an evaluation pass that runs with autograd on. Sizes are Python ints; a concatenation that
# an inner loop rebuilds each epoch (a sample grid) holds one epoch's graphs only.
import torch


def train(model, loader, optimizer, criterion, epochs):
    preds = None
    n_samples = 0
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        preds = out if preds is None else torch.cat((preds, out))  # error: PIT102
        n_samples += out.size(0) * x.dim()
    return preds, n_samples


def evaluate(model, loader):  # warning: PIT201
    model.eval()
    predict = None
    for x, y in loader:
        output = model(x)
        if predict is None:
            predict = output
        else:
            predict = torch.cat((predict, output))  # error: PIT102
    return predict.data.numpy()


def train_with_grids(generator, loader, optimizer, criterion, epochs):  # warning: PIT201
    for epoch in range(epochs):
        for z, y in loader:
            optimizer.zero_grad()
            loss = criterion(generator(z), y)
            loss.backward()
            optimizer.step()
        grid = []
        for k in range(10):
            sample = generator(torch.randn(8, 4))
            grid = sample if len(grid) == 0 else torch.cat((grid, sample), 0)
        print(grid.shape)


def evaluate_detached(model, loader):  # warning: PIT201 (nobody here calls it: an evaluation entry)
    model.eval()
    predict = torch.empty(0)
    for x, y in loader:
        predict = torch.cat((predict, model(x).detach()))
    return predict


def evaluate_per_student(model, loader):  # warning: PIT201
    # round twenty-five (DKT): the outputs concatenated in an inner per-item loop onto a tensor the batch
    # loop carries too (nothing in it resets pred_epoch); temp_pred is reset for every student
    pred_epoch = torch.Tensor([])
    for batch in loader:
        pred = model(batch)
        for student in range(pred.shape[0]):
            temp_pred = torch.Tensor([])
            for i in range(pred.shape[1]):
                temp_pred = torch.cat([temp_pred, pred[student][i:i + 1]])
            pred_epoch = torch.cat([pred_epoch, temp_pred])  # error: PIT102
    return pred_epoch.detach().numpy()
