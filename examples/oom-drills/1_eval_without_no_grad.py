"""Drill 1: evaluation without torch.no_grad(), predictions kept on the GPU.

Every eval batch builds an autograd graph that the kept logits hold alive, so memory climbs batch
by batch until the allocator gives up in the middle of evaluation. Fix: torch.no_grad() (or
inference_mode) and move predictions to the CPU (.detach().cpu()) as they come.
"""
import torch

from _common import Model, args, batch, ledger, loss_of

a = args(__doc__, batch=8, seq=1024, eval_batches=200, fix=0)
model = Model().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ml = ledger(a, model, opt)
for step in range(3):
    with ml.step():
        loss_of(model, batch(a.batch, a.seq)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
kept = []
with ml.phase("eval"):
    for i in range(a.eval_batches):
        if a.fix:
            with torch.no_grad():
                kept.append(model(batch(a.batch, a.seq)).argmax(-1).cpu())
        else:
            kept.append(model(batch(a.batch, a.seq)))  # graph + logits stay on the GPU
        print(f"eval batch {i}: {torch.cuda.memory_allocated() / 2**30:.2f} GiB allocated", flush=True)
ml.close()
