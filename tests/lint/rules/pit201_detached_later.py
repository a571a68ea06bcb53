"""A forward whose value reaches the backward only through a later ``.detach()`` built a graph nothing
uses: a teacher's output detached on the next line (knowledge distillation), a rollout's outputs
collected and detached after the loop (PPO). The usual idioms stay silent: a target network's value,
a GAN's fake batch detached into the discriminator, a value detached where it is made."""
import torch
import torch.nn.functional as F


def distill(student_net, teacher_net, opt, batches):  # error: PIT201
    for x, y in batches:
        t_out = teacher_net(x)
        t_out = t_out.detach()
        s_out = student_net(x)
        loss = F.kl_div(F.log_softmax(s_out, 1), F.softmax(t_out, 1)) + F.cross_entropy(s_out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def ppo_round(model, opt, states):  # error: PIT201
    values = []
    for s in states:
        values.append(model(s))
    values = torch.cat(values).detach()
    for s in states:
        loss = (model(s) - values).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def dqn_step(q_net, target_net, opt, s, a, r, s2):
    q_next = target_net(s2)
    target = r + 0.99 * q_next.max(1)[0].detach()
    loss = F.mse_loss(q_net(s).gather(1, a), target)
    opt.zero_grad()
    loss.backward()
    opt.step()


def gan_step(netG, netD, opt_d, opt_g, z, real):
    fake = netG(z)
    loss_d = -netD(real).mean() + netD(fake.detach()).mean()
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    fake2 = netG(z)
    loss_g = -netD(fake2).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()


def gan_step_made_detached(netG, netD, opt_d, z, real):
    fake = netG(z).detach()
    loss_d = -netD(real).mean() + netD(fake).mean()
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
