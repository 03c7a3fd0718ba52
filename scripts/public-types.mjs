// Part of `npm run build`, after tsc: decides which declarations the tarball
// ships.
//
// The public declarations are dist/index.d.ts, dist/lockfile/index.d.ts (the
// entry points' CommonJS declarations; their ES module twins, dist/*.d.mts,
// re-export them) and every .d.ts they reach by relative imports (import/export ... from, import('...')). Every other .d.ts
// (the CLI's, the server's, internal modules no public type mentions) is named
// in dist/.npmignore, which npm applies inside the "files" entry, so only the
// public .d.ts are packed. The list is computed, not written by hand, so it
// follows the API as it changes.
//
// dist/ is CommonJS (dist/package.json, scripts/build-cjs.mjs), so its .d.ts
// declarations are CommonJS ones, and each entry point's .d.mts re-exports
// them for ES module importers. No .d.cts file describes anything: any left in
// dist/ are removed here so they are never packed.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*)(['"])(\.{1,2}\/[^'"]+?)\.js\2/g;

function walk(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

const reachable = new Set();
const queue = [join(dist, 'index.d.ts'), join(dist, 'lockfile', 'index.d.ts')];
while (queue.length > 0) {
  const file = queue.pop();
  if (reachable.has(file)) continue;
  reachable.add(file);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(SPECIFIER)) {
    queue.push(resolve(dirname(file), `${m[3]}.d.ts`));
  }
}

for (const stale of walk(dist).filter((p) => p.endsWith('.d.cts'))) rmSync(stale);

const internal = walk(dist)
  .filter((p) => p.endsWith('.d.ts') && !reachable.has(p))
  .map((p) => `/${relative(dist, p)}`)
  .sort();
writeFileSync(
  join(dist, '.npmignore'),
  '# Written by scripts/public-types.mjs: declarations no public type reaches are not packed.\n' + internal.join('\n') + '\n',
);
process.stdout.write(`public-types: ${reachable.size} public declarations, ${internal.length} internal ones left out of the tarball\n`);
