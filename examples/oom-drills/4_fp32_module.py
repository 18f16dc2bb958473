"""Drill 4: an fp32 module in a bf16 model.

The model is cast to bf16 but its vocabulary head is put back in fp32 (as an `upcast_lmhead`
setting or a `.float()` left in a custom module does): the head's weights, gradients and AdamW
states double, and its input and output activations are fp32. The same batch that fits in pure
bf16 runs out of memory. Fix: keep the module in bf16, or upcast only the loss.
"""
import torch

from _common import Model, args, batch, ledger

a = args(__doc__, batch=16, seq=2048, fix=0)
model = Model(hidden=4096, layers=12).cuda().to(torch.bfloat16)
if not a.fix:
    model.head.float()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ml = ledger(a, model, opt)
for step in range(5):
    with ml.step():
        ids = batch(a.batch, a.seq)
        x = model.emb(ids)
        for b in model.blocks:
            x = b(x)
        logits = model.head(x.to(model.head.weight.dtype))
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    print(f"step {step}: peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB", flush=True)
ml.close()
