#!/usr/bin/env python3
"""docs/architecture.md matches the tree: every folder of src/ has exactly one row in the folder table,
every folder row names an existing folder, every file a row names exists (a bare name in the row's
folder, below it, in include/zaya/ or elsewhere in src/; a path as written), every path named anywhere
in the document exists, and the layer drawing names every layer of CMakeLists.txt's ZAYA_LAYERS."""
import os
import re
import sys

FILE = re.compile(r'`([A-Za-z0-9_.*/<>-]+\.(?:c|h|cu|py|sh|cmake|md))`')
PATH = re.compile(r'`((?:src|include|tests|docs|scripts|bench|cmake)/[A-Za-z0-9_./-]*)`')


def exists_below(top, name):
    for dirpath, _, files in os.walk(top):
        if name in files:
            return True
    return False


def main(root):
    doc = open(os.path.join(root, 'docs', 'architecture.md')).read()
    errors, rows = [], {}
    table = doc[:doc.index('## Layers')]
    for line in table.splitlines():
        m = re.match(r'\| `([^`]+)` \|(.*)\|\s*$', line)
        if m:
            rows.setdefault(m.group(1).rstrip('/'), []).append(m.group(2))
    for folder, texts in sorted(rows.items()):
        if len(texts) > 1:
            errors.append('folder table: %s has %d rows' % (folder, len(texts)))
        if not os.path.isdir(os.path.join(root, folder)):
            errors.append('folder table: %s does not exist' % folder)
            continue
        for text in texts:
            for name in FILE.findall(text):
                if any(ch in name for ch in '*<>'):
                    continue
                if '/' in name:
                    ok = any(os.path.exists(os.path.join(root, top, name)) for top in ('', folder, 'include'))
                else:
                    ok = (exists_below(os.path.join(root, folder), name) or
                          os.path.exists(os.path.join(root, 'include', 'zaya', name)) or
                          exists_below(os.path.join(root, 'src'), name))
                if not ok:
                    errors.append('folder table: %s names %s, which does not exist' % (folder, name))
    for d in sorted(os.listdir(os.path.join(root, 'src'))):
        if os.path.isdir(os.path.join(root, 'src', d)) and 'src/' + d not in rows:
            errors.append('folder table: src/%s has no row' % d)
    for name in sorted(set(PATH.findall(doc))):
        if '*' not in name and not os.path.exists(os.path.join(root, name)):
            errors.append('%s is named but does not exist' % name)
    cmake = open(os.path.join(root, 'CMakeLists.txt')).read()
    layers = re.search(r'set\(ZAYA_LAYERS ([^)]*)\)', cmake).group(1).split()
    drawing = re.search(r'## Layers.*?```(.*?)```', doc, re.S).group(1)
    for layer in layers:
        if not re.search(r'\b%s\b' % layer, drawing):
            errors.append('layer drawing: layer %s is missing' % layer)
    for e in errors:
        print(e)
    print('architecture_doc: %d folder rows, %d layers, %d problems' % (len(rows), len(layers), len(errors)))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
