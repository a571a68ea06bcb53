"""Round nineteen's shapes. Models kept in a list and called by index (``self.actors[i](obs)``, MADDPG);
an evaluation loop whose environment comes from ``create_train_env`` (a maker, not a training call:
Super-mario PPO); an evaluation function nobody in the project calls (NTM's ``evaluate``); outputs that
reach numpy (``np.argpartition``, ``np.append``, never a graph) after ``out = out[:, -1, :]`` (S3Rec);
a model method the file's model class defines (``self.model.finetune``); a model kept global and wrapped
(``dlrm = quantize_dynamic(dlrm)``) whose wrapper function returns its forward (DLRM); a tokenizer
from ``from_pretrained``, which is no model (CATR's ``tokenizer.decode``); ``compute_metrics_for_model(df)``,
which is what is done with a model, not one (Jigsaw's validation, round twenty-one)."""
import numpy as np
import torch
from torch import nn
from metrics import compute_bias_metrics_for_model
from transformers import BertTokenizer

tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")  # no weights: decode() is no forward


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Agents:
    def __init__(self, n):
        self.actors = [Actor() for _ in range(n)]
        self.critics = [Actor() for _ in range(n)]

    def select_action(self, states):  # error: PIT201
        actions = torch.zeros(len(self.actors), 2)
        for i in range(len(self.actors)):
            act = self.actors[i](states[i].unsqueeze(0)).squeeze()
            actions[i, :] = torch.clamp(act, -1.0, 1.0)
        return actions

    def values(self, states):
        return [self.critics[i](s) for i, s in enumerate(states)]  # returned: the caller trains on them


def rollout(env, steps):
    agents = Agents(2)
    obs = env.reset()
    for _ in range(steps):
        action = agents.select_action(obs).data.cpu()
        obs, reward, done, _ = env.step(action.numpy())


def create_train_env(world):
    return world


def play(world, model):  # error: PIT201
    env = create_train_env(world)
    state = env.reset()
    while True:
        logits = model(state)
        action = torch.argmax(logits).item()
        state, reward, done, info = env.step(action)
        if done:
            break


def train(net, criterion, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(net(x), y).backward()
        optimizer.step()


def evaluate(net, criterion, x, y):  # error: PIT201
    out = net(x)  # nobody here calls it: run from a notebook, for its numbers
    return {"loss": criterion(out, y).item(), "out": out}


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.encoder = nn.GRU(4, 4, batch_first=True)

    def finetune(self, ids):
        out, _ = self.encoder(self.emb(ids))
        return out


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optim = model, optimizer

    def fit(self, loader):
        for ids, target in loader:
            out = self.model.finetune(ids)
            loss = (out[:, -1, :] - target).pow(2).mean()
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()

    def full_sort(self, loader):  # error: PIT201
        preds = None
        for ids, _ in loader:
            out = self.model.finetune(ids)
            out = out[:, -1, :]
            scores = out @ self.model.emb.weight.t()
            scores = scores.cpu().data.numpy().copy()
            best = np.argpartition(scores, -5)[:, -5:]
            preds = best if preds is None else np.append(preds, best, axis=0)
        return preds


def dlrm_wrap(x):
    return dlrm(x)


def run(loader, optimizer):
    global dlrm
    dlrm = Recommender()
    dlrm = torch.quantization.quantize_dynamic(dlrm, {nn.Linear}, dtype=torch.qint8)
    for x, y in loader:
        loss = (dlrm_wrap(x)[0] - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def inference(loader):  # error: PIT201
    scores = []
    for x, _ in loader:
        z = dlrm_wrap(x)
        scores.append(z.detach().cpu().numpy())
    return scores


class Cache:
    def __init__(self, model):
        self.model = model

    def refresh(self, x):
        self.last = last_scores(self.model, x)
        self.best = best_items(self.model, x)
        self.kept = kept_scores(self.model, x)


def last_scores(model, x):  # error: PIT201
    out = model(x)
    out = out[:, -1]  # rebound from itself: the next value decides
    out = out.detach().cpu().numpy()
    return out


def best_items(model, x):  # error: PIT201
    out = model(x)
    print(out.shape)
    out = out.detach().numpy()
    return np.clip(out, 0, 1)  # numpy makes arrays: no graph comes back


def kept_scores(model, x):
    out = model(x)
    out = out[:, -1]
    return out  # the caller keeps the graph


words = tokenizer.decode([101, 2023, 102], skip_special_tokens=True)


def validation(model, loader, frame):
    preds = []
    for x in loader:
        with torch.no_grad():
            preds.extend(model(x)[:, 0].numpy())
    frame["prediction"] = preds
    return compute_bias_metrics_for_model(frame, "prediction")  # what is done with a model: no forward


def _run_validation(model, loader, frame):
    return validation(model, loader, frame)  # its forwards run under no_grad: nothing to report here
