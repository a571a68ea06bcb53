import torch


class Trainer:
    def fit(self, model, loader, opt, crit):
        losses = []
        running = 0.0
        for x, y in loader:
            opt.zero_grad()
            out = model(x)
            loss = crit(out, y)
            loss.backward()
            opt.step()
            losses.append(loss)  # error: PIT102
            running += loss  # error: PIT102
            self.last_output = out  # error: PIT102
        return losses, running


def correct(model, loader, opt, crit):
    losses, running, preds = [], 0.0, []
    for x, y in loader:
        opt.zero_grad()
        out = model(x)
        loss = crit(out, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        running += loss.item()
        preds.append(out.detach().cpu())
        batch_losses = []  # built and consumed in the same iteration
        batch_losses.append(loss)
        print(sum(batch_losses))
        total = float(loss)
        losses.append(total)
    return losses


def derived_values_also_count(model, loader, opt, crit):
    history = []
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        scaled = loss * 2
        scaled.backward()
        opt.step()
        history.append(scaled / 2)  # error: PIT102


def chained_total(model, loader, opt, crit):
    total = 0
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        total = total + loss  # error: PIT102
    return total


def evaluation_under_no_grad_is_fine(model, loader, opt, crit):
    outs = []
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        with torch.no_grad():
            outs.append(model(x))


def get_accuracy(SR, GT, threshold=0.5):
    SR = SR > threshold
    corr = torch.sum(SR == GT)
    acc = float(corr) / float(SR.numel())
    return acc


def scaled(loss, w):
    return loss * w


def f1_score(SR, GT):
    se = get_accuracy(SR, GT)  # a helper of this file that returns numbers: a number too
    return 2 * se / (se + 1e-6)


def metrics_from_helpers_that_return_numbers_or_tensors(model, loader, opt, crit):
    acc, total = 0.0, 0.0
    for x, y in loader:
        opt.zero_grad()
        out = model(x)
        loss = crit(out, y)
        loss.backward()
        opt.step()
        acc += get_accuracy(out, y)  # every return of the helper is a float: no graph
        acc += f1_score(out, y)
        total += scaled(loss, 2.0)  # error: PIT102


def radius_from_distances(net, loader, optimizer, c, nu, quantile):
    radius = torch.zeros(1)
    for x in loader:
        optimizer.zero_grad()
        dist = ((net(x) - c) ** 2).sum(1)
        loss = dist.mean()
        loss.backward()
        optimizer.step()
        radius.data = quantile(dist, nu)  # assigning .data sets values: no graph is kept
        net.center = torch.tensor(quantile(dist, nu))  # torch.tensor copies into a new leaf


def totals_in_a_dict(model, loader, opt, crit):
    # MAPPO's train_info: most entries take .item(), one takes the graph-attached ratio itself
    info = {"loss": 0.0, "ratio": 0.0}
    for x, y, old in loader:
        opt.zero_grad()
        out = model(x)
        loss = crit(out, y)
        ratio = torch.exp(out - old)
        (loss * ratio.mean()).backward()
        opt.step()
        info["loss"] += loss.item()
        info["ratio"] += ratio.mean()  # error: PIT102
    return info


def totals_keyed_by_a_variable(model, loader, opt, crit, names):
    stats = {}
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        for k in names:
            stats[k] += loss.detach()  # detached, and under a key that varies: no finding


def fit_with_early_stopping(model, train_loader, val_loader, optimizer, loss_func, epochs):  # warning: PIT109  # warning: PIT201
    # TabSurvey's fit(): after each epoch's steps, a validation pass with autograd on sums its losses
    best = float("inf")
    for _ in range(epochs):
        for x, y in train_loader:
            loss = loss_func(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        val_loss = 0.0
        for x, y in val_loader:
            out = model(x)
            val_loss += loss_func(out, y)  # error: PIT102
        best = min(best, val_loss.item())
    return best


def truncated_steps(model, chunks, optimizer, loss_func):
    for chunk in chunks:
        optimizer.zero_grad()
        model(chunk[0])
        total = 0.0
        for x, y in chunk:
            total += loss_func(model(x), y)  # summed for the backward after the loop: the graph is needed
        total.backward()
        optimizer.step()


class KGOptimizer:
    """Round twenty-six (KGEmb): the loss comes from a method given only the batch; that backward runs
    on it says it has a graph, and the epoch's total keeps every batch's."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def calculate_loss(self, batch):
        return self.model(batch).pow(2).mean()

    def epoch(self, batches):
        total_loss = 0.0
        for batch in batches:
            l = self.calculate_loss(batch)
            self.optimizer.zero_grad()
            l.backward()
            self.optimizer.step()
            total_loss += l  # error: PIT102
        return total_loss / len(batches)


class Perplexity:
    """IBM's pytorch-seq2seq: a loss object with its own backward(); get_loss() gives a float."""

    def __init__(self):
        self.acc_loss = 0

    def eval_batch(self, outputs, target):
        self.acc_loss = self.acc_loss + (outputs - target).pow(2).mean()

    def backward(self):
        self.acc_loss.backward()

    def get_loss(self):
        return self.acc_loss.data.item()


class SupervisedTrainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer, self.loss = model, optimizer, Perplexity()

    def train_batch(self, x, y):
        loss = self.loss
        loss.eval_batch(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.get_loss()

    def train_epochs(self, batches):
        epoch_loss_total = 0
        for x, y in batches:
            loss = self.train_batch(x, y)
            epoch_loss_total += loss  # a float: what train_batch returns is get_loss()'s number
        return epoch_loss_total
