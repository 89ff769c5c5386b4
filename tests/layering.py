#!/usr/bin/env python3
"""Include-level layering check: every #include in src/<layer>/ names a header of the same layer or of
a layer it declares in CMakeLists.txt (ZAYA_USES_<layer>, the graph the link checks enforce). Public
headers are assigned to their layer below; a new header must be added here.

The device backend boundary: CUDA lives in src/gpu (behind the opaque include/zaya/gpu.h) and NCCL in
src/dist/nccl.c, both built into the CUDA module (libzaya_cuda.so) that the zaya binary opens with dlopen. No other source of src/, include/, bench/ or tests/ includes a CUDA, cuBLAS or NCCL
header, names a CUDA / cuBLAS / NCCL identifier (comments and string literals aside), or tests
__CUDACC__, __CUDA_ARCH__, ZAYA_CUDA or ZAYA_HAVE_*CUDA* / ZAYA_HAVE_*NCCL* in a preprocessor
conditional: a CPU file never changes with the build's device support (tests/layering_planted.py plants
each kind of violation and checks that this script reports it)."""
import os
import re
import sys

OWNER = {
    'core': 'alloc backend bf16 dtype fs ft_protocol json log plot proc progress rng status sysinfo threads timer',
    'gpu': 'gpu',
    'dist': 'dist',
    'kernels': 'attention kernels matmul model_ops',
    'tokenizer': 'tokenizer',
    'data': 'curriculum data shard',
    'model': 'config model',
    'optim': 'balance optim spike state',
    'engine': 'engine',
    'ckpt': 'ckpt safetensors',
    'size': 'size',
    'infer': 'infer infer_bench infer_eval infer_generate infer_model infer_weights',
    'bench': 'bench bench_all bench_coll bench_gemm bench_kernels bench_mem bench_model profile',
    'ft': 'ft',
    'train': 'corpus cp_link train',
    'study': 'study',
}


# Where device code may live: the device layer, and the NCCL communicator (which includes nccl.h and
# src/gpu/gpu_rt.h, the CUDA mapping header).
BACKEND_HOMES = ('src/gpu/',)
BACKEND_FILES = {'src/dist/nccl.c'}
BACKEND_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]\s*(cuda|cublas|cudnn|curand|cufft|cusparse|nvrtc|nvToolsExt|nccl|thrust/|cub/)')
BACKEND_NAME = re.compile(r'\b(__CUDACC__|__CUDA_ARCH__|cuda[A-Z]\w*|cublas[A-Z]\w*|CUBLAS_\w+|CUDART_\w+|CUDA_VERSION|'
                          r'nccl[A-Z]\w*|NCCL_\w+|CU(stream|device|context|result)\w*)\b')
BACKEND_COND = re.compile(r'^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef)\b(.*)')
BACKEND_MACRO = re.compile(r'\b(__CUDACC__|__CUDA_ARCH__|ZAYA_CUDA\w*|ZAYA_HAVE_\w*(CUDA|NCCL)\w*)\b')


COMMENT_OR_LITERAL = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_code(text):
    """The text with comments and string / character literals blanked (newlines kept)."""
    return COMMENT_OR_LITERAL.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)


def backend_boundary(root, errors):
    for top in ('src', 'include', 'bench', 'tests'):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(('.c', '.h', '.cu', '.cuh', '.cpp', '.cc')):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, '/')
                if rel.startswith(BACKEND_HOMES) or rel in BACKEND_FILES:
                    continue
                raw = open(path, errors='replace').read()
                for no, (line, code) in enumerate(zip(raw.split('\n'), strip_code(raw).split('\n')), 1):
                    if BACKEND_INCLUDE.match(line) and code.lstrip().startswith('#'):
                        errors.append('%s:%d: includes a device header (%s): device code belongs in src/gpu behind '
                                      'zaya/gpu.h' % (rel, no, line.strip()))
                        continue
                    c = BACKEND_COND.match(code)
                    if c and BACKEND_MACRO.search(c.group(2)):
                        errors.append('%s:%d: a device-build conditional (%s) outside src/gpu: call zaya/gpu.h, '
                                      'whose stub answers in a CPU build' % (rel, no, code.strip()))
                        continue
                    if c or code.lstrip().startswith('#'):
                        continue
                    m = BACKEND_NAME.search(code)
                    if m:
                        errors.append('%s:%d: names the device API (%s) outside src/gpu' % (rel, no, m.group(1)))


def main(root):
    cmake = open(os.path.join(root, 'CMakeLists.txt')).read()
    layers = re.search(r'set\(ZAYA_LAYERS ([^)]*)\)', cmake).group(1).split()
    uses = {}
    for layer in layers:
        m = re.search(r'set\(ZAYA_USES_%s([^)]*)\)' % layer, cmake)
        uses[layer] = set(m.group(1).replace('""', '').split()) if m else set()
    # transitive closure: a layer may use what its dependencies use
    allowed = {}
    for layer in layers:
        seen, todo = {layer}, list(uses[layer])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(uses.get(d, ()))
        allowed[layer] = seen
    owner = {h: layer for layer, hs in OWNER.items() for h in hs.split()}
    errors = []
    for h in sorted(os.listdir(os.path.join(root, 'include', 'zaya'))):
        if h.endswith('.h') and h[:-2] not in owner:
            errors.append('include/zaya/%s: no layer assigned (add it to tests/layering.py)' % h)
    # every source of src/ belongs to a layer folder (a file elsewhere would be built by no target)
    for dirpath, _, files in os.walk(os.path.join(root, 'src')):
        rel = os.path.relpath(dirpath, os.path.join(root, 'src'))
        for name in files:
            if name.endswith(('.c', '.h', '.cu')) and (rel == '.' or rel.split(os.sep)[0] not in layers or os.sep in rel):
                errors.append('src/%s: not in a layer folder (src/<layer>/, one of: %s)' %
                              (os.path.normpath(os.path.join(rel, name)), ' '.join(layers)))
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for layer in layers:
        d = os.path.join(root, 'src', layer)
        for name in sorted(os.listdir(d)):
            if not name.endswith(('.c', '.h', '.cu')):
                continue
            for no, line in enumerate(open(os.path.join(d, name), errors='replace'), 1):
                m = inc.match(line)
                if not m:
                    continue
                path = m.group(1)
                top = path.split('/')[0]
                if top == 'zaya':
                    target = owner.get(os.path.basename(path)[:-2])
                elif top in layers:
                    target = top
                else:
                    continue  # a header of the same folder
                if target and target not in allowed[layer]:
                    errors.append('src/%s/%s:%d: includes "%s" (layer %s), which layer %s does not use' %
                                  (layer, name, no, path, target, layer))
    backend_boundary(root, errors)
    for e in errors:
        print(e)
    print('layering: %d layers, %d violations' % (len(layers), len(errors)))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
