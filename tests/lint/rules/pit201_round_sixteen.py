"""Round sixteen's shapes: what carries no graph out of a forward. The indices of a reduction
(``_, next_word = torch.max(prob, dim=1)``, ``out.max(1)[1]``), argmax, comparisons and sampled
indices (``torch.multinomial``): a greedy decoder that returns only token ids built graphs nothing
uses (the annotated transformer's greedy_decode). The values of the same reduction still carry one."""
import torch


def greedy_decode(model, src, max_len, start):  # error: PIT201
    memory = model.encode(src)
    ys = torch.zeros(1, 1).fill_(start).long()
    for _ in range(max_len):
        prob = model.generator(model.decode(memory, ys)[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.data[0]
        ys = torch.cat([ys, torch.zeros(1, 1).long().fill_(next_word)], dim=1)
    return ys


def sample_ids(model, x, steps):  # error: PIT201
    ids = []
    for _ in range(steps):
        probs = torch.softmax(model(x), dim=-1)
        ids.append(torch.multinomial(probs, 1))
    return ids


def best_scores(model, x):
    values, _ = model(x).max(1)  # the values of the reduction: a graph the caller may train on
    return values


def accuracy_parts(model, x, y):
    out = model(x)
    pred = out.max(1)[1]
    return pred.eq(y), out  # the output itself is returned too


def train(model, opt, batches):
    for x, y in batches:
        loss = -best_scores(model, x).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        hits, logits = accuracy_parts(model, x, y)
        (logits.sum() * 0).backward()
        print(hits.sum().item())
    return greedy_decode(model, batches[0][0], 5, 0), sample_ids(model, batches[0][0], 3)
