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


def trpo(policy, value_net, value_opt, env_states, advantages, iterations):  # error: PIT201
    # round twenty-six (a TRPO): the rollout's log-probabilities, stacked after the loop, are what
    # torch.autograd.grad differentiates for the policy gradient: their graphs are used
    for _ in range(iterations):
        log_probs, values = [], []
        for t in range(len(env_states)):
            log_probs.append(policy(env_states[t]).log_softmax(-1)[0])
            values.append(value_net(env_states[t]).item())
        log_probs = torch.stack(log_probs)
        g = torch.autograd.grad((log_probs * advantages).mean(), list(policy.parameters()))
        g = torch.cat([grad.view(-1) for grad in g])
        step_dir = g.detach() / 10
        policy.weight.data.add_(step_dir[: policy.weight.numel()].view_as(policy.weight))
        value_loss = (torch.tensor(values, requires_grad=True) - advantages).pow(2).mean()
        value_opt.zero_grad()
        value_loss.backward()
        value_opt.step()
