#!/usr/bin/env python3
"""Every `zaya_X_init` of a public header (include/zaya) has its release: `zaya_X_free` declared in
include/zaya, or, for the few whose release has another name, the function named in RELEASED_BY
(declared as well). An init that owns nothing (it fills a caller's struct or sets a setting) is
listed in OWNS_NOTHING, and that claim is checked: it takes no pointer-to-pointer out-parameter, and
its definition in src/ allocates and opens nothing. A new init without a release fails here.

    init_free.py ROOT
"""
import os
import re
import sys

# init -> its release, where the release is not <init's prefix>_free
RELEASED_BY = {
    'zaya_backend_cpu_init': 'zaya_backend_free',   # one free for a backend of any kind
    'zaya_gpu_backend_init': 'zaya_backend_free',
    'zaya_dist_init': 'zaya_dist_finalize',          # MPI's word: finalises what init started
    'zaya_st_writer_init': 'zaya_st_writer_abort',   # or zaya_st_writer_finish; both free the writer
    'zaya_engine_optim_init': 'zaya_engine_free',    # the optimizer state is part of the engine
}
# inits that fill a caller's struct or set a process setting and own no resource
OWNS_NOTHING = {'zaya_cp_link_init', 'zaya_loader_init', 'zaya_progress_init', 'zaya_spike_guard_init',
                'zaya_threads_init'}

DECL = re.compile(r'\b(zaya_\w+)\s*\(([^;{]*?)\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?;', re.S)
ALLOC = re.compile(r'\b(malloc|calloc|realloc|aligned_alloc|posix_memalign|zaya_alloc\w*|fopen|open|mmap|'
                   r'pthread_create)\s*\(')


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)


def declarations(root):
    decls = {}
    inc = os.path.join(root, 'include', 'zaya')
    for name in sorted(os.listdir(inc)):
        if name.endswith('.h'):
            text = strip_comments(open(os.path.join(inc, name)).read())
            for m in DECL.finditer(text):
                decls.setdefault(m.group(1), ('include/zaya/' + name, m.group(2)))
    return decls


def definition(root, fn):
    """The body of fn's definition in src/ (None when not found)."""
    head = re.compile(r'^[^\s#].*\b%s\s*\([^;]*?\)\s*\{' % re.escape(fn), re.M | re.S)
    for dirpath, _, files in os.walk(os.path.join(root, 'src')):
        for name in files:
            if not name.endswith('.c'):
                continue
            text = strip_comments(open(os.path.join(dirpath, name), errors='replace').read())
            m = head.search(text)
            if not m:
                continue
            depth, i = 1, m.end()
            while i < len(text) and depth:
                depth += {'{': 1, '}': -1}.get(text[i], 0)
                i += 1
            return text[m.end():i]
    return None


def main(root):
    decls = declarations(root)
    inits = sorted(f for f in decls if f.endswith('_init'))
    errors = []
    for f in inits:
        where, params = decls[f]
        free = f[:-len('_init')] + '_free'
        if free in decls:
            continue
        if f in RELEASED_BY:
            if RELEASED_BY[f] not in decls:
                errors.append('%s (%s): its release %s is not declared in include/zaya' % (f, where, RELEASED_BY[f]))
            continue
        if f in OWNS_NOTHING:
            if '**' in params.replace(' ', ''):
                errors.append('%s (%s): listed as owning nothing but hands out an object (%s)' % (f, where, params))
            body = definition(root, f)
            if body is None:
                errors.append('%s (%s): no definition found in src/' % (f, where))
            elif ALLOC.search(body):
                errors.append('%s (%s): listed as owning nothing but its definition calls %s' %
                              (f, where, ALLOC.search(body).group(1)))
            continue
        errors.append('%s (%s): no %s, and no other release named in tests/init_free.py' % (f, where, free))
    for stale in sorted((set(RELEASED_BY) | OWNS_NOTHING) - set(inits)):
        errors.append('%s: listed in tests/init_free.py but no longer declared' % stale)
    for e in errors:
        print('FAIL: ' + e)
    paired = len(inits) - len(RELEASED_BY) - len(OWNS_NOTHING)
    print('init_free: %d inits: %d with a _free, %d released by another name, %d owning nothing; %d problem(s)' %
          (len(inits), paired, len(RELEASED_BY), len(OWNS_NOTHING), len(errors)))
    return 1 if errors or not inits else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
