"""A rollout inside the training loop (steps without backward) appends outputs with their graphs,
and the list is detached after it (Super-mario PPO): every step's graph stays alive until then and
none is used. Pieces of one batch stacked and detached (VoiceFilter's d-vectors) and a list whose
graphs the loss uses are left alone."""
import torch


def train(model, embedder, opt, env_states, batches):  # error: PIT201
    for _ in range(10):
        values = []
        for _ in range(512):
            values.append(model(env_states))  # warning: PIT102
        values = torch.cat(values).detach()
        for x, mels in batches:
            dvecs = []
            for mel in mels:
                dvecs.append(embedder(mel))
            dvec = torch.stack(dvecs).detach()
            outs = []
            for t in range(4):
                outs.append(model(x[t] + dvec))
            loss = (torch.stack(outs) - values[: len(outs)]).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
