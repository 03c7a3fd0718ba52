#!/usr/bin/env node
// Builds the XNU model addon: binding.gyp's darwin build (every source
// OS=='mac' compiles: fs_darwin.cc, notify_darwin.cc and the shared ones),
// compiled FOR LINUX against native/xnu-model/include (darwin's headers,
// modelled) and linked with the model's implementation of those interfaces
// on linux (native/xnu-model/*.cc). With RUNWARDEN_ADDON pointing at the
// result, runwarden runs its darwin code paths on this linux kernel: what
// the model covers, and what it does not, is written in the model's sources.
//
//   node scripts/darwin-model.mjs            -> build/darwin-model/runwarden.node
//   node scripts/darwin-model.mjs --print    prints the path only (building if needed)
//
// The darwin sources see __APPLE__ defined, as on darwin, except a source
// that includes libuv's <uv.h> (its darwin half needs Mach headers the model
// does not have). A build is reused while no input is newer than it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { macBuild } from './darwin.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MODEL = join(ROOT, 'native', 'xnu-model');
const OUT_DIR = join(ROOT, 'build', 'darwin-model');
export const MODEL_ADDON = join(OUT_DIR, 'runwarden.node');

function filesUnder(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

function nodeInclude() {
  const dirs = [process.env['npm_config_nodedir'] && join(process.env['npm_config_nodedir'], 'include', 'node'), join(dirname(dirname(process.execPath)), 'include', 'node'), '/usr/include/node'];
  for (const d of dirs) if (d && existsSync(join(d, 'node_api.h'))) return d;
  throw new Error(`no node_api.h under ${dirs.filter(Boolean).join(', ')}`);
}

/** Builds the model addon unless it is newer than every input; returns its path. */
export function buildDarwinModel({ quiet = false } = {}) {
  const build = macBuild(ROOT);
  const sources = build.sources.map((s) => join(ROOT, s));
  const modelSources = readdirSync(MODEL).filter((f) => f.endsWith('.cc')).map((f) => join(MODEL, f));
  const inputs = [...sources, ...modelSources, ...filesUnder(join(MODEL, 'include')), ...readdirSync(join(ROOT, 'native')).filter((f) => f.endsWith('.h')).map((f) => join(ROOT, 'native', f)), join(ROOT, 'binding.gyp'), fileURLToPath(import.meta.url)];
  if (existsSync(MODEL_ADDON)) {
    const built = statSync(MODEL_ADDON).mtimeMs;
    if (inputs.every((f) => statSync(f).mtimeMs <= built)) return MODEL_ADDON;
  }
  const cxx = process.env['CXX'] || 'g++';
  const napi = dirname(createRequire(join(ROOT, 'package.json')).resolve('node-addon-api/package.json'));
  const common = ['-std=c++17', '-O2', '-fPIC', '-Wall', '-Wextra', ...build.defines.filter((d) => !d.startsWith('_DARWIN')).map((d) => `-D${d}`), `-I${napi}`, `-I${nodeInclude()}`];
  const objDir = join(OUT_DIR, 'obj');
  mkdirSync(objDir, { recursive: true });
  const objects = [];
  const compile = (src, args) => {
    const obj = join(objDir, `${basename(src).replace(/\.cc$/, '')}${src.startsWith(MODEL) ? '.model' : ''}.o`);
    const r = spawnSync(cxx, [...common, ...args, '-c', src, '-o', obj], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`darwin-model: ${src} did not compile:\n${r.stderr}${r.error ?? ''}`);
    if (!quiet && r.stderr) process.stderr.write(r.stderr);
    objects.push(obj);
  };
  for (const src of sources) {
    const apple = /#include\s*<uv\.h>/.test(readFileSync(src, 'utf8')) ? [] : ['-D__APPLE__=1'];
    compile(src, [`-I${join(MODEL, 'include')}`, ...apple]);
  }
  // The model's own sources see linux's headers (theirs by relative path).
  for (const src of modelSources) compile(src, []);
  const tmp = `${MODEL_ADDON}.tmp-${process.pid}`;
  const r = spawnSync(cxx, ['-shared', '-o', tmp, ...objects, '-lpthread'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`darwin-model: link failed:\n${r.stderr}${r.error ?? ''}`);
  renameSync(tmp, MODEL_ADDON);
  return MODEL_ADDON;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const out = buildDarwinModel({ quiet: process.argv.includes('--print') });
    process.stdout.write(`${process.argv.includes('--print') ? out : `darwin model addon: ${out}`}\n`);
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
