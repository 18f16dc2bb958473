"""Drill 3: a batch far too large.

The first forward pass asks for more activation memory than the card has: an OOM at step 1,
in the forward pass or the loss (the fp32 logits of batch x seq x vocab are the largest tensor).
Fix: a smaller micro-batch with gradient accumulation, gradient checkpointing, a shorter sequence.
"""
import torch

from _common import Model, args, batch, ledger, loss_of

a = args(__doc__, batch=256, seq=2048)
model = Model().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ml = ledger(a, model, opt)
with ml.step():
    loss_of(model, batch(a.batch, a.seq)).backward()
    opt.step()
ml.close()
