"""num_workers read from the YAML config beside the script (deeplab-pytorch's
CONFIG.DATALOADER.NUM_WORKERS, 0 in configs/voc12.yaml): the training loader runs in the main process."""
import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader, TensorDataset

CONFIG = OmegaConf.load("configs/voc.yaml")
dataset = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))
loader = DataLoader(dataset, batch_size=CONFIG.SOLVER.BATCH_SIZE, num_workers=CONFIG.DATALOADER.NUM_WORKERS,  # warning: PIT401
                    shuffle=True)
test_loader = DataLoader(dataset, batch_size=2, num_workers=CONFIG.DATALOADER.NUM_WORKERS)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
