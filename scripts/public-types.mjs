// Part of `npm run build`, after tsc: decides which declarations the tarball
// ships, and writes their CommonJS twins.
//
// - The public declarations are dist/index.d.ts and every .d.ts it reaches by
//   relative imports (import/export ... from, import('...')). Every other .d.ts
//   (the CLI's, the server's, internal modules no public type mentions) is named
//   in dist/.npmignore, which npm applies inside the "files" entry, so only the
//   public .d.ts are packed. The list is computed, not written by hand, so it
//   follows the API as it changes.
// - Each public .d.ts gets a .d.cts copy whose relative specifiers end in .cjs.
//   package.json's "require" condition points TypeScript at dist/index.d.cts, so a
//   CommonJS project (module node16/nodenext) type-checks `import ... from
//   'runwarden'` / `require('runwarden')` without TS1479; at run time both
//   conditions load the one ESM build (require(esm), see engines), so there is one
//   copy of the module state and `instanceof RunwardenError` holds everywhere.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
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
const queue = [join(dist, 'index.d.ts')];
while (queue.length > 0) {
  const file = queue.pop();
  if (reachable.has(file)) continue;
  reachable.add(file);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(SPECIFIER)) {
    queue.push(resolve(dirname(file), `${m[3]}.d.ts`));
  }
}

for (const file of reachable) {
  const text = readFileSync(file, 'utf8').replace(SPECIFIER, (_all, lead, q, spec) => `${lead}${q}${spec}.cjs${q}`);
  writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), text);
}

const internal = walk(dist)
  .filter((p) => p.endsWith('.d.ts') && !reachable.has(p))
  .map((p) => `/${relative(dist, p)}`)
  .sort();
writeFileSync(
  join(dist, '.npmignore'),
  '# Written by scripts/public-types.mjs: declarations no public type reaches are not packed.\n' + internal.join('\n') + '\n',
);
process.stdout.write(`public-types: ${reachable.size} public declarations (+ .d.cts twins), ${internal.length} internal ones left out of the tarball\n`);
