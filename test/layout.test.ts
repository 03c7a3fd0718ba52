/**
 * The folder layout is the architecture (docs/internals.md, "Layout"): each layer of src/
 * imports only from itself and the layers below it, so nothing points back up; no two
 * files import each other, directly or around a circle (type-only imports count: a
 * circle of types is still two files that cannot be read apart); and only kernel/
 * touches the addon object (kernel/native.ts `native()`), every layer above reaching
 * the kernel through named kernel functions.
 * This reads the real import statements of every module.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Lowest first. `index.ts` at the root may import anything. */
const LAYERS = ['contract', 'kernel', 'lock', 'lockfile', 'read', 'status', 'write', 'live', 'serve', 'cli'] as const;

function modules(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...modules(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every relative import of a module: the specifier text (`{ a, type B }`, `* as x`, or '' for a bare or dynamic import) and the target file. */
function importsOf(file: string): { names: string; target: string }[] {
  const text = readFileSync(file, 'utf8');
  const out: { names: string; target: string }[] = [];
  for (const m of text.matchAll(/(?:(?:import|export)\s+(type\s+)?([^'";]*?)\s*from\s*|import\s*\(?\s*)'(\.{1,2}\/[^']+)'/g)) {
    const target = normalize(join(dirname(file), m[3])).replace(/\.js$/, '.ts');
    out.push({ names: m[2] ?? '', target });
  }
  return out;
}

/** The circles of a directed graph (one per strongly connected component of more than one node, or a node importing itself), each as its nodes. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's algorithm, iterative over an explicit stack of (node, next edge).
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: [string, number][] = [[start, 0]];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1];
      const [v, i] = top;
      const edges = graph.get(v) ?? [];
      if (i < edges.length) {
        top[1]++;
        const w = edges[i];
        if (!graph.has(w)) continue;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push([w, 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const u = work[work.length - 1][0];
        low.set(u, Math.min(low.get(u)!, low.get(v)!));
      }
      if (low.get(v) === index.get(v)) {
        const scc: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          scc.push(w);
        } while (w !== v);
        if (scc.length > 1 || edges.includes(v)) found.push(scc.sort());
      }
    }
  }
  return found;
}

function layerOf(path: string): string | undefined {
  const rel = relative(SRC, path).split(sep);
  return rel.length > 1 ? rel[0] : undefined;
}

describe('layout', () => {
  it('every folder under src/ is a known layer', () => {
    const dirs = readdirSync(SRC).filter((n) => statSync(join(SRC, n)).isDirectory());
    expect(dirs.sort()).toEqual([...LAYERS].sort());
  });

  it('no module imports from a layer above its own', () => {
    const upward: string[] = [];
    let edges = 0;
    for (const file of modules(SRC)) {
      const from = layerOf(file);
      if (from === undefined) continue;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
        const target = normalize(join(dirname(file), m[1]));
        const to = layerOf(target);
        edges++;
        if (to === undefined) {
          upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)} (the package root)`);
        } else if (LAYERS.indexOf(to as (typeof LAYERS)[number]) > LAYERS.indexOf(from as (typeof LAYERS)[number])) {
          upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
        }
      }
    }
    expect(edges).toBeGreaterThan(50);
    expect(upward).toEqual([]);
  });

  it('no file imports itself around a circle (type-only imports included)', () => {
    const graph = new Map<string, string[]>();
    for (const file of modules(SRC)) graph.set(relative(SRC, file), importsOf(file).map((i) => relative(SRC, i.target)));
    expect([...graph.values()].flat().length).toBeGreaterThan(50);
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle when there is one (a control for the check above)', () => {
    const g = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(circles(g)).toEqual([['a', 'b', 'c'], ['e']]);
    expect(circles(new Map([['a', ['b']], ['b', []]]))).toEqual([]);
  });

  it('only kernel/ touches the addon object: no module above it imports native() from kernel/native.ts', () => {
    const NATIVE = join(SRC, 'kernel', 'native.ts');
    const reaching: string[] = [];
    let seen = 0;
    for (const file of modules(SRC)) {
      const layer = layerOf(file);
      if (layer === 'kernel') continue;
      for (const { names, target } of importsOf(file)) {
        if (target !== NATIVE) continue;
        seen++;
        const named = names
          .replace(/[{}]/g, '')
          .split(',')
          .map((n) => n.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0]);
        if (names.startsWith('*') || named.includes('native')) reaching.push(relative(SRC, file));
      }
    }
    expect(seen).toBeGreaterThan(0);
    expect(reaching).toEqual([]);
  });
});
