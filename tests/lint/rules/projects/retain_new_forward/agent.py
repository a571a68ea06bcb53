import torch.nn.functional as F


class Agent:
    def __init__(self, value_net, actor_net, value_opt, actor_opt):
        self.value_net, self.actor_net = value_net, actor_net
        self.value_opt, self.actor_opt = value_opt, actor_opt

    def learn(self, state, target):
        value = self.value_net(state)
        value_loss = F.mse_loss(value, target)
        self.value_opt.zero_grad()
        value_loss.backward(retain_graph=True)  # error: PIT103
        self.value_opt.step()
        actions = self.actor_net(state)  # a new forward: the value graph is not used again
        actor_loss = -actions.mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
