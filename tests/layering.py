#!/usr/bin/env python3
"""Include-level layering check: every #include in src/<layer>/ names a header of the same layer or of
a layer it declares in CMakeLists.txt (ZAYA_USES_<layer>, the graph the link checks enforce). Public
headers are assigned to their layer below; a new header must be added here."""
import os
import re
import sys

OWNER = {
    'core': 'alloc bf16 dtype fs ft_protocol json log plot proc progress rng status sysinfo threads timer',
    'gpu': 'gpu',
    'dist': 'dist',
    'kernels': 'attention kernels matmul',
    'tokenizer': 'tokenizer',
    'data': 'curriculum data shard',
    'model': 'config model',
    'optim': 'balance optim spike state',
    'ckpt': 'ckpt safetensors',
    'size': 'size',
    'infer': 'infer infer_bench infer_eval infer_generate infer_model infer_weights',
    'bench': 'bench bench_all bench_coll bench_gemm bench_kernels bench_mem bench_model profile',
    'ft': 'ft',
    'train': 'corpus cp_link train',
    'study': 'study',
}


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
    for e in errors:
        print(e)
    print('layering: %d layers, %d violations' % (len(layers), len(errors)))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
