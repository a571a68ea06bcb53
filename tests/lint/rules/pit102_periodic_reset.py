"""PIT102's running totals reset only now and then (``loss_ = 0`` under ``if step % 100 == 0:``
after the sum): still a total over many steps. Its twins: a total started before the sum in each
iteration, and a loss built up in one step (``loss = loss + w * reg``) before that step's backward."""
import torch.nn.functional as F


def train(net, optimizer, loader, history):
    for epoch in range(10):
        net.train()
        step = 0
        loss_ = 0
        for images, target in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(net(images), target)
            loss.backward()
            optimizer.step()
            loss_ += loss  # error: PIT102
            step += 1
            if step % 100 == 0:
                print(loss.item())
                loss_ = 0


def train_columns(net, optimizer, loader, columns):
    for x, ys in loader:
        outs = net(x)
        l1 = 0  # a total of this iteration, started before the sum
        for j in range(columns):
            l1 += F.cross_entropy(outs[j], ys[:, j])
        optimizer.zero_grad()
        l1.backward()
        optimizer.step()


def train_regularised(net, optimizer, loader, reg, weight):
    for x, y in loader:
        out = net(x)
        loss = F.mse_loss(out, y)
        loss = loss + weight * reg(out)  # one step's loss, built before its backward
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
