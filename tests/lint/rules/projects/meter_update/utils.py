"""An AverageMeter as most training repositories write it: update() adds what it is given to a total."""


class AverageMeter:
    def __init__(self):
        self.val, self.sum, self.count, self.avg = 0, 0, 0, 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count
