import torch
import torch.nn.functional as F


def attention_loss(student, teacher):
    s_attention = F.normalize(student.pow(2).mean(1).view(student.size(0), -1))
    with torch.no_grad():  # the teacher's side: a target the student's graph is compared with
        t_attention = F.normalize(teacher.pow(2).mean(1).view(teacher.size(0), -1))
    return (s_attention - t_attention).pow(2).mean()


def angle_loss(student, teacher):
    with torch.no_grad():
        td = teacher.unsqueeze(0) - teacher.unsqueeze(1)
        t_angle = torch.bmm(F.normalize(td, p=2, dim=2), F.normalize(td, p=2, dim=2).transpose(1, 2)).view(-1)
    sd = F.normalize(student.unsqueeze(0) - student.unsqueeze(1), p=2, dim=2)
    s_angle = torch.bmm(sd, sd.transpose(1, 2)).view(-1)
    loss = F.smooth_l1_loss(s_angle, t_angle)
    return loss
