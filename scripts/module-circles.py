#!/usr/bin/env python3
"""No two modules of a crate import each other (issue 51). For one crate's src/: the module graph
of which file each `crate::`/`super::`/`self::` path names (in `use` items and inline paths, test
code included, comments and strings stripped); prints every pair of files that import each other
and every longer cycle (strongly connected components), and exits 1 if there is any. `make lint`
runs it on every crate: `scripts/module-circles.py crates/core/src [-v]`."""
import os, re, sys
from collections import defaultdict

src = sys.argv[1]
files = {}
for root, _, names in os.walk(src):
    for n in names:
        if n.endswith('.rs'):
            p = os.path.join(root, n)
            rel = os.path.relpath(p, src)[:-3].split(os.sep)
            if rel == ['lib'] or rel == ['main']:
                mod = ()
            elif rel[-1] == 'mod':
                mod = tuple(rel[:-1])
            else:
                mod = tuple(rel)
            files[mod] = p
# `#[path]`-less inline `mod x { }` blocks stay part of their file.

def strip(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text

def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]"""
    tree = tree.strip()
    i = tree.find('{')
    if i < 0:
        return [re.sub(r'\s+as\s+\w+$', '', tree).replace(' ', '')]
    prefix = tree[:i]
    depth, parts, cur = 0, [], ''
    for ch in tree[i + 1:tree.rfind('}')]:
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur); cur = ''
        else:
            cur += ch
    parts.append(cur)
    out = []
    for part in parts:
        if part.strip():
            out += expand(prefix + part.strip())
    return out

def resolve(me, path):
    segs = [s for s in path.split('::') if s]
    if not segs: return None
    if segs[0] == 'crate':
        base, segs = (), segs[1:]
    elif segs[0] in ('super', 'self'):
        base = me
        while segs and segs[0] in ('super', 'self'):
            if segs[0] == 'super': base = base[:-1]
            segs = segs[1:]
    else:
        return None
    mod = base
    for s in segs:
        if mod + (s,) in files: mod = mod + (s,)
        else: break
    return mod

edges = defaultdict(lambda: defaultdict(set))
for me, p in files.items():
    text = strip(open(p).read())
    # Inline `mod x { ... }` blocks: a `super::` inside one names this file's module.
    blocks = []
    for m in re.finditer(r'\bmod\s+(\w+)\s*\{', text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            if depth == 0: break
            i += 1
        blocks.append((m.start(), i, m.group(1)))
    def at(pos):
        inner = tuple(n for a, b, n in sorted(blocks) if a <= pos <= b)
        return me + inner
    paths = []
    for m in re.finditer(r'\buse\s+([^;]*);', text):
        paths += [(at(m.start()), p) for p in expand(m.group(1))]
    for m in re.finditer(r'(?<![\w:])((?:crate|super|self)(?:::\w+)+)', text):
        paths.append((at(m.start()), m.group(1)))
    # Paths relative to this module (2018 edition): `use agents::X;`, `rules::RULES`.
    children = {m[-1] for m in files if len(m) == len(me) + 1 and m[:-1] == me}
    for m in re.finditer(r'(?<![\w:])(\w+)((?:::\w+)+)', text):
        if m.group(1) in children and at(m.start()) == me:
            paths.append((me, 'self::' + m.group(1) + m.group(2)))
    for where, path in list(paths):
        if where == me and path.split('::')[0] in children:
            paths.append((me, 'self::' + path))
    for where, path in paths:
        t = resolve(where, path)
        if t is None: continue
        while t not in files: t = t[:-1]
        if t is None or t == me: continue
        edges[me][t].add(path)

name = lambda m: '::'.join(m) or '(lib.rs)'
if '-v' in sys.argv:
    for a in sorted(edges):
        print(name(a), '->', ', '.join(sorted(name(b) for b in edges[a])))
pairs = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if b in edges and a in edges[b]})
for a, b in pairs:
    print(f'PAIR {name(a)} <-> {name(b)}: {sorted(edges[a][b])} / {sorted(edges[b][a])}')
# Tarjan's SCC for longer cycles
idx, low, st, on, sccs, n = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in list(edges.get(v, {})):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        c = []
        while True:
            w = st.pop(); on.discard(w); c.append(w)
            if w == v: break
        if len(c) > 1: sccs.append(c)
sys.setrecursionlimit(10000)
for v in list(files):
    if v not in idx: sc(v)
for c in sccs:
    print('CYCLE', ' '.join(sorted(name(m) for m in c)))
print(f'{len(files)} files, {sum(len(v) for v in edges.values())} edges, {len(pairs)} pairs, {len(sccs)} cycles')
sys.exit(1 if pairs or sccs else 0)
