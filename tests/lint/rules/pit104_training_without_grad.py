import torch
from torch import no_grad


def loss_under_no_grad(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        with torch.no_grad():
            loss = crit(model(x), y)  # error: PIT104
        loss.backward()
        opt.step()


@torch.inference_mode()
def decorated(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)  # error: PIT104
        loss.backward()
        opt.step()


def aliased(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        with no_grad():
            target = model(x).argmax(-1)  # a no_grad pseudo-label: fine
        loss = crit(model(x), target)
        loss.backward()
        opt.step()


def gan_generator_term_cut(generator, discriminator, loader, opt, l1, bce):
    for x, y in loader:
        fake = generator(x)
        with torch.no_grad():
            verdict = discriminator(fake)  # error: PIT104
        opt.zero_grad()
        (l1(fake, y) + bce(verdict, y)).backward()
        opt.step()


def distillation_teacher_is_fine(student, teacher, loader, opt, crit):
    for x, y in loader:
        with torch.no_grad():
            target = teacher(x)  # plain data in: nothing to cut
        opt.zero_grad()
        crit(student(x), target).backward()
        opt.step()
