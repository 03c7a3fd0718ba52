/**
 * The folder layout is the architecture (docs/internals.md, "Layout"): each layer of src/
 * imports only from itself and the layers below it, so nothing points back up.
 * This reads the real import statements of every module.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Lowest first. `index.ts` at the root may import anything. */
const LAYERS = ['contract', 'kernel', 'lock', 'read', 'status', 'write', 'live', 'serve', 'cli'] as const;

function modules(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...modules(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
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
});
