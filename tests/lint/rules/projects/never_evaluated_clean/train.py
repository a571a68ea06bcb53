import torch
from seq2seq import Decoder

decoder = Decoder()
optimizer = torch.optim.SGD(decoder.parameters(), lr=0.1)
for x, y in [(torch.randn(2, 8), torch.randn(2, 8))]:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(decoder(x), y).backward()
    optimizer.step()
decoder.eval()
