#!/usr/bin/env python3
"""tests/layering.py must fail on what it is there to catch: on a copy of the tree (CMakeLists.txt,
src/, include/, bench/, tests/ sources) it must pass clean, then report each planted violation, one
plant at a time: a wrong-direction include, a CUDA / cuBLAS / NCCL header, a device-build conditional
and a device API call outside src/gpu and src/dist/nccl.c. Mentions in comments and strings, and the
NCCL communicator's own conditional, must not be reported."""
import io
import os
import shutil
import sys
import tempfile
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layering  # noqa: E402

SOURCES = ('.c', '.h', '.cu', '.cuh', '.cpp', '.cc')

# (file, text appended, message the check must print; None: the check must stay clean)
PLANTS = [
    ('src/kernels/rope.c', '#include "zaya/model.h"\n', 'includes "zaya/model.h" (layer model), which layer kernels does not use'),
    ('src/model/forward.c', '#include <cuda_runtime.h>\n', 'src/model/forward.c:%d: includes a device header (#include <cuda_runtime.h>)'),
    ('src/kernels/matmul.c', '#include "cublasLt.h"\n', 'includes a device header (#include "cublasLt.h")'),
    ('src/train/dp.c', '#include <nccl.h>\n', 'src/train/dp.c:%d: includes a device header (#include <nccl.h>)'),
    ('src/kernels/attention.c', '#ifdef ZAYA_HAVE_CUDA\nstatic int on_device;\n#endif\n',
     'src/kernels/attention.c:%d: a device-build conditional (#ifdef ZAYA_HAVE_CUDA)'),
    ('include/zaya/model.h', '#if defined(__CUDACC__)\n#endif\n', 'include/zaya/model.h:%d: a device-build conditional (#if defined(__CUDACC__))'),
    ('src/optim/muon.c', '#if ZAYA_CUDA && 1\n#endif\n', 'a device-build conditional (#if ZAYA_CUDA && 1)'),
    ('src/bench/coll_run.c', '#elif defined(ZAYA_HAVE_NCCL)\n', 'src/bench/coll_run.c:%d: a device-build conditional'),
    ('src/model/moe.c', 'static void planted(void) { cudaDeviceSynchronize(); }\n',
     'src/model/moe.c:%d: names the device API (cudaDeviceSynchronize) outside src/gpu'),
    ('tests/test_model.c', 'static int planted_status = CUBLAS_STATUS_SUCCESS;\n', 'names the device API (CUBLAS_STATUS_SUCCESS)'),
    ('bench/bench_step.c', 'static ncclComm_t planted_comm;\n', 'bench/bench_step.c:%d: names the device API (ncclComm_t)'),
    # the NCCL communicator's host side is in the zaya binary: no NCCL there
    ('src/dist/nccl_host.c', '#include <nccl.h>\n', 'src/dist/nccl_host.c:%d: includes a device header (#include <nccl.h>)'),
    # allowed: comments, strings, the NCCL communicator, the device layer itself
    ('src/model/forward.c', '/* __CUDACC__ and cudaMalloc in a comment; #include <cuda.h> */\n// #ifdef ZAYA_HAVE_CUDA\n', None),
    ('src/model/forward.c', 'static const char *planted_msg = "cudaMalloc( failed, #ifdef ZAYA_HAVE_CUDA";\n', None),
    ('src/dist/nccl.c', '#if defined(ZAYA_HAVE_NCCL)\n#include <nccl.h>\n#endif\n', None),
    ('src/gpu/loader.c', '#ifdef __CUDACC__\n#include <cuda_runtime.h>\n#endif\n', None),
]


def copy_tree(root, dst):
    shutil.copy(os.path.join(root, 'CMakeLists.txt'), dst)
    for top in ('src', 'include', 'bench', 'tests'):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            rel = os.path.relpath(dirpath, root)
            os.makedirs(os.path.join(dst, rel), exist_ok=True)
            for name in files:
                if name.endswith(SOURCES):
                    shutil.copy(os.path.join(dirpath, name), os.path.join(dst, rel, name))


def run(tree):
    out = io.StringIO()
    with redirect_stdout(out):
        rc = layering.main(tree)
    return rc, out.getvalue()


def main(root):
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, 'clean')
        os.makedirs(clean)
        copy_tree(root, clean)
        rc, out = run(clean)
        if rc != 0:
            print('FAIL: the unmodified copy has violations:\n' + out)
            return 1
        print('ok: clean copy passes')
        for i, (rel, text, want) in enumerate(PLANTS):
            path = os.path.join(clean, rel)
            with open(path) as f:
                original = f.read()
            line = original.count('\n') + 1  # the first planted line
            with open(path, 'w') as f:
                f.write(original + text)
            rc, out = run(clean)
            with open(path, 'w') as f:
                f.write(original)
            if want is None:
                good = rc == 0
                what = 'stays clean'
            else:
                msg = want % line if '%d' in want else want
                good = rc == 1 and msg in out
                what = 'reports "%s"' % msg
            print('%s: %s + %r %s' % ('ok' if good else 'FAIL', rel, text.strip(), what))
            if not good:
                print(out)
                failures += 1
    print('layering_planted: %d of %d plants failed' % (failures, len(PLANTS)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
