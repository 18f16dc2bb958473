"""Drill 2: loss tensors kept in a list.

A metric loss is computed with autograd on and kept as a tensor (`losses.append(val_loss)`);
it is never backpropagated, so its graph and every activation saved for it stay alive. Memory
grows by one forward pass every step though the batch never changes. Fix: `losses.append(
val_loss.item())`, or compute it under torch.no_grad().
"""
import torch

from _common import Model, args, batch, ledger, loss_of

a = args(__doc__, batch=4, seq=1024, steps=500, fix=0)
model = Model().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ml = ledger(a, model, opt)
losses = []
for step in range(a.steps):
    with ml.step():
        loss = loss_of(model, batch(a.batch, a.seq))
        val_loss = loss_of(model, batch(a.batch, a.seq))  # a metric, computed with grad
        losses.append(val_loss.item() if a.fix else val_loss)  # the tensor keeps its graph alive
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    print(f"step {step}: {torch.cuda.memory_allocated() / 2**30:.2f} GiB allocated", flush=True)
ml.close()
