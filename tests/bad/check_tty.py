#!/usr/bin/env python3
# check_tty.py MEMLEDGER - `memledger diagnose` with no LOG, its standard input a terminal, says at
# once that it reads standard input (issue 15, item 9) instead of waiting in silence; then a log
# pasted and Ctrl-D is diagnosed as from a file.
import os, pty, select, sys, time

binary = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.execv(binary, [binary, "diagnose"])
out = b""
deadline = time.time() + 5
while time.time() < deadline and b"standard input" not in out:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            out += os.read(fd, 4096)
        except OSError:
            break
ok = b"reading the log from standard input" in out
os.write(fd, b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.00 GiB is free.\n")
time.sleep(0.2)
os.write(fd, b"\x04")
deadline = time.time() + 10
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("FAIL: diagnose did not finish after Ctrl-D")
    sys.exit(1)
if not ok:
    print("FAIL: diagnose on a terminal did not say it reads standard input; it printed: %r" % out[:300])
    sys.exit(1)
if b"out of memory" not in out.lower() and b"oom" not in out.lower():
    print("FAIL: the pasted log was not diagnosed: %r" % out[-300:])
    sys.exit(1)
print("ok")
