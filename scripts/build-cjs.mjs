// Part of `npm run build`, after tsc (which type-checks and writes the .d.ts
// declarations only): writes the JavaScript of dist/ as CommonJS, one file per
// source file, and the two ES module entry points that re-export it.
//
// Why one CommonJS build with ES module entry points, and not two builds: a
// process that loads runwarden both ways (an ES module app with a CommonJS
// dependency that requires it, a Jest suite beside the app) must get ONE copy
// of every module: one loaded addon (whose probe buffers are registered once),
// one set of error classes (so `instanceof RunwardenError` holds whichever form
// threw), one table of held proper-lockfile-style locks and one heartbeat
// thread. `import 'runwarden'` reaches dist/index.mjs, which re-exports
// dist/index.js; `require('runwarden')` reaches dist/index.js itself; Node
// caches that file once, so both forms share every module under it, and so do
// deep imports of dist/**.js from either form. CommonJS needs no `require(esm)`:
// Jest's module runtime, ts-node and bundlers in CommonJS mode load it as they
// load any package (docs/install.md, "Module formats").
//
// - dist/package.json says "type": "commonjs", so the .js and .d.ts under dist/
//   are CommonJS to Node and to TypeScript; bin/ and scripts/ stay ES modules.
// - import.meta.url, which the sources use to find files beside themselves
//   (the package root, worker scripts), becomes this file's URL from
//   __filename; where there is no __filename (this code bundled into an ES
//   module app) it is undefined, and the loader says the package directory is
//   unknown (src/kernel/native.ts).
// - runwarden/lockfile's CommonJS entry is proper-lockfile's shape: the `lock`
//   function as module.exports, with the other five calls as its properties.
import { readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const dist = join(root, 'dist');

function sources(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      // The browser app is copied as it is (scripts/copy-public.mjs).
      if (relative(src, p) !== join('serve', 'public')) sources(p, out);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) {
      out.push(p);
    }
  }
  return out;
}

const entryPoints = sources(src);
await build({
  entryPoints,
  outdir: dist,
  outbase: src,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  bundle: false,
  logLevel: 'warning',
  define: { 'import.meta.url': '__rw_import_meta_url' },
  banner: { js: "var __rw_import_meta_url = typeof __filename === 'string' ? require('node:url').pathToFileURL(__filename).href : undefined;" },
});

writeFileSync(join(dist, 'package.json'), '{\n  "type": "commonjs"\n}\n');

const header = '// Written by scripts/build-cjs.mjs.\n';
// The package root: the ES module entry re-exports the CommonJS build.
writeFileSync(join(dist, 'index.mjs'), `${header}export * from './index.js';\n`);
writeFileSync(join(dist, 'index.d.mts'), `${header}export * from './index.js';\n`);

// runwarden/lockfile.
const LOCKFILE_CALLS = ['lock', 'unlock', 'check', 'lockSync', 'unlockSync', 'checkSync'];
writeFileSync(
  join(dist, 'lockfile.js'),
  `${header}'use strict';\n// proper-lockfile's shape: module.exports is lock(), and lock.lock === lock.\nmodule.exports = require('./lockfile/index.js').lock;\n`,
);
writeFileSync(
  join(dist, 'lockfile.mjs'),
  `${header}import lockfile from './lockfile.js';\nexport default lockfile;\nexport const { ${LOCKFILE_CALLS.join(', ')} } = lockfile;\n`,
);
writeFileSync(
  join(dist, 'lockfile.d.mts'),
  `${header}import * as api from './lockfile/index.js';\nexport * from './lockfile/index.js';\n/** \`lock\`, with the other calls as its properties (proper-lockfile's default export). */\ndeclare const lockfile: typeof api.lock & typeof api;\nexport default lockfile;\n`,
);
process.stdout.write(`build-cjs: ${entryPoints.length} modules as CommonJS, entry points for runwarden and runwarden/lockfile\n`);
