#!/usr/bin/env python3
"""A small process: `zaya help`, a usage error and other commands that load nothing large peak under
a bound of resident memory (50 MB). Each child's peak RSS is its own rusage (os.wait4), not the
sum of anything else. The bound is about the process's start-up (libraries mapped and relocated,
static initialisers): before this check every zaya process peaked near 215 MB, most of it libcublasLt
relocated at start-up, which the CUDA module now keeps out of CPU commands (docs/gpu.md). The
figure includes what the forked child held of this interpreter before exec (a few MB), so it is an
upper bound of zaya's own peak (`/usr/bin/time -f %M zaya help` reads about 9 MB).

    small_process.py ZAYA [BOUND_MB]
"""
import os
import subprocess
import sys

zaya = sys.argv[1]
bound_kb = int(float(sys.argv[2]) * 1024) if len(sys.argv) > 2 else 50 * 1024

CASES = [
    (['help'], 0),
    ([], 2),                           # no command: the list on stderr, usage error
    (['train', '--no-such-flag'], 2),  # a usage error of a command
    (['--version'], 0),
    (['train', '--help'], 0),
    (['bench', 'gemm', '--help'], 0),
    (['ckpt', 'verify', '/nonexistent/zaya-ckpt'], 1),  # a runtime error before anything is loaded
    # the trainer up to its device check: MPI_Init (about 11 MB of Open MPI), no model yet; the module
    # hidden, so it stops there in every build
    (['train', '--device', 'cuda', '-q', '-o', '/nonexistent/zaya-small-process'], 1),
]
env = dict(os.environ, ZAYA_CUDA_MODULE='/nonexistent/libzaya_cuda.so')

fail = 0
for args, want_rc in CASES:
    p = subprocess.Popen([zaya] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    peak = ru.ru_maxrss  # KiB on Linux
    ok = rc == want_rc and 0 < peak <= bound_kb
    print('%s: zaya %s: exit %d (want %d), peak RSS %.1f MB (bound %.0f MB)' %
          ('ok' if ok else 'FAIL', ' '.join(args) or '(no arguments)', rc, want_rc, peak / 1024, bound_kb / 1024))
    fail += not ok
print('small_process: %d failure(s)' % fail)
sys.exit(1 if fail else 0)
