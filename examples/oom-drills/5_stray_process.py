"""Drill 5: a stray process holding the GPU ("nothing else is running").

A leftover process (a crashed notebook kernel, an unreleased vLLM server) keeps memory on the
card; here a child process allocates --stray-gib and sleeps. The training then runs out of memory
with a request that would fit on an empty card. `memledger watch` lists the other process with
its pid, name and bytes at the start and at the peak. Fix: find and stop it (nvidia-smi,
`memledger watch`), or choose another GPU.
"""
import multiprocessing as mp
import time

import torch

from _common import Model, args, batch, ledger, loss_of


def hold(gib, ready):
    x = torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda")
    ready.set()
    time.sleep(3600)
    del x


if __name__ == "__main__":
    a = args(__doc__, stray_gib=0.0, batch=16, seq=2048)
    free, total = torch.cuda.mem_get_info()
    gib = a.stray_gib or max(1.0, free / 2**30 - 8)  # leave the training about 8 GiB
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    stray = ctx.Process(target=hold, args=(gib, ready), daemon=True)
    stray.start()
    ready.wait()
    print(f"stray process {stray.pid} holds {gib:.1f} GiB", flush=True)
    try:
        model = Model().cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ml = ledger(a, model, opt)
        for step in range(3):
            with ml.step():
                loss_of(model, batch(a.batch, a.seq)).backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
        ml.close()
    finally:
        stray.terminate()
