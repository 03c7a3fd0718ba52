#!/usr/bin/env node
// runwarden's install step (package.json "install"). It never fails an install
// that has a working addon:
//
// 1. If the tarball's prebuilt addon for this platform loads here and its
//    constants match (the same check the loader makes), nothing is compiled.
// 2. Otherwise the addon is compiled with node-gyp (the copy npm hands install
//    scripts; runwarden does not depend on node-gyp), against local Node headers
//    when there are any, so nothing is downloaded.
// 3. If that fails, it says what this machine lacks (python3, make, a C++
//    compiler) and exits 1: without a prebuild or a compiler there is no addon,
//    and an install that looks fine would only fail later, at the first probe.
//
// The loader (dist/kernel/native.js) makes the same choice at run time, so an
// install whose scripts were skipped (npm's allowScripts, --ignore-scripts)
// still works wherever a prebuild fits.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { findNodeGyp, localNodedir, missingToolchain } from './node-gyp.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

function say(msg) {
  process.stderr.write(`runwarden: ${msg}\n`);
}

/** Step 1: whether the prebuild fits; the reason when it does not. */
async function prebuildFits() {
  const loader = join(root, 'dist', 'kernel', 'native.js');
  if (!existsSync(loader)) return { ok: false, why: 'no dist/ yet (a source checkout)' };
  let mod;
  try {
    mod = await import(pathToFileURL(loader).href);
  } catch (err) {
    return { ok: false, why: `dist/kernel/native.js does not load: ${err instanceof Error ? err.message : String(err)}` };
  }
  const { prebuildFor, openAddonFile } = mod;
  // A checkout whose dist/ predates the prebuild loader: compile, as it always did.
  if (typeof prebuildFor !== 'function' || typeof openAddonFile !== 'function') return { ok: false, why: 'dist/ has no prebuild loader (an older build)' };
  const pre = prebuildFor(root);
  if ('why' in pre) return { ok: false, why: pre.why };
  try {
    openAddonFile(pre.path);
    return { ok: true, path: pre.path };
  } catch (err) {
    return { ok: false, why: `${relative(root, pre.path)} does not load here: ${err instanceof Error ? err.message : String(err)}` };
  }
}

const pre = await prebuildFits();
if (pre.ok) {
  say(`using the prebuilt addon ${relative(root, pre.path)}; nothing to compile`);
  process.exit(0);
}

const gyp = findNodeGyp(root);
const nodedir = localNodedir();
let status = 1;
if (gyp) {
  say(`no usable prebuilt addon (${pre.why}); compiling it with node-gyp`);
  const args = [gyp, 'rebuild', ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
  // node-gyp lets npm_config_* in its environment override its flags, so the
  // headers' directory goes there too (npm may have set it empty).
  const env = nodedir ? { ...process.env, npm_config_nodedir: nodedir } : process.env;
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env });
  status = r.status ?? 1;
}
if (status === 0) process.exit(0);

const missing = missingToolchain();
if (!gyp) missing.unshift('node-gyp (npm bundles one; this install was not run by npm, or its copy is gone)');
say(
  `the native addon could not be compiled, and no prebuilt one fits (${pre.why}).\n` +
    (missing.length > 0
      ? `  Missing: ${missing.join('; ')}.\n`
      : `  python3, make and a C++ compiler are present; node-gyp's output above says what failed.\n`) +
    (nodedir ? '' : `  No local Node headers were found, so node-gyp tried to download them; set npm's nodedir to avoid that.\n`) +
    `  Then run \`npm rebuild runwarden\`, or point RUNWARDEN_ADDON at a runwarden.node built elsewhere.`,
);
process.exit(1);
