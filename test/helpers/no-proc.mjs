/**
 * darwin has no /proc. In the XNU-model lane (`npm run test:darwin-model`) this module is loaded with
 * `--import` into every Node process of the lane (test/helpers/proc-guard.ts puts it in NODE_OPTIONS
 * when RUNWARDEN_ADDON is the model build): a read of /proc by runwarden's own code (src/, dist/,
 * bin/, or an installed runwarden package) fails with ENOENT, as it would on a Mac, and is written to
 * the file RUNWARDEN_PROC_LOG names, which the lane's global teardown turns into a failure. So a
 * /proc read the code makes without asking the addon's system facts (src/kernel/system.ts) first
 * cannot pass in the model because linux happens to have /proc.
 *
 * Only a process whose addon is the model build is darwin: a child the lane starts on linux's own addon
 * on purpose (RUNWARDEN_ADDON naming build/Release, to compare the two systems) keeps its /proc.
 *
 * The harness itself (test/, vitest, tools under node_modules) reads /proc freely: the model's own
 * C++ reads it too, behind libproc. One read of runwarden's is the host's, not the system's, and is
 * let through: the loader's look at which C library this linux process runs on
 * (src/kernel/native.ts linuxLibc), which only ever chooses a linux prebuild.
 *
 * Plain JavaScript, so a child Node process of any version loads it without a TypeScript loader.
 */
import { appendFileSync } from 'node:fs';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PRODUCT = [join(ROOT, 'src') + '/', join(ROOT, 'dist') + '/', join(ROOT, 'bin') + '/', '/node_modules/runwarden/'];
const LOG = process.env['RUNWARDEN_PROC_LOG'];
const MODEL_ADDON = join(ROOT, 'build', 'darwin-model', 'runwarden.node');
const addon = process.env['RUNWARDEN_ADDON'];
const onModel = addon !== undefined && addon !== '' && resolve(addon) === MODEL_ADDON;

/** The path argument as text, when it names something under /proc. */
function procPath(p) {
  let text;
  if (typeof p === 'string') text = p;
  else if (Buffer.isBuffer(p)) text = p.toString('latin1');
  else if (p instanceof URL && p.protocol === 'file:') text = fileURLToPath(p);
  else return undefined;
  return text === '/proc' || text.startsWith('/proc/') ? text : undefined;
}

/**
 * Whether the read is runwarden's own: the first frame past this module is in runwarden's code, and
 * not the loader's libc look. A dependency's read (prom-client's default metrics read
 * /proc/self/limits where process.platform says linux) is that library's own rule, as it would be on
 * a Mac.
 */
function fromProduct(stack) {
  if (/\blinuxLibc\b/.test(stack)) return false;
  const caller = stack.split('\n').slice(1).find((frame) => !frame.includes('no-proc.mjs'));
  return caller !== undefined && PRODUCT.some((dir) => caller.includes(dir));
}

function refuse(name, path) {
  if (!onModel) return undefined;
  const stack = new Error().stack ?? '';
  if (!fromProduct(stack)) return undefined;
  if (LOG) {
    try {
      appendFileSync(LOG, `pid ${process.pid}: ${name}(${JSON.stringify(path)})\n${stack.split('\n').slice(2, 12).join('\n')}\n\n`);
    } catch {
      /* the log is the harness's; a failure to write it must not change what the code sees */
    }
  }
  return Object.assign(new Error(`ENOENT: no such file or directory, ${name} '${path}' (darwin has no /proc: test/helpers/no-proc.mjs)`), {
    code: 'ENOENT',
    errno: -2,
    syscall: name,
    path,
  });
}

const SYNC = ['readFileSync', 'readdirSync', 'readlinkSync', 'openSync', 'statSync', 'lstatSync', 'existsSync', 'accessSync', 'opendirSync', 'realpathSync'];
const CALLBACK = ['readFile', 'readdir', 'readlink', 'open', 'stat', 'lstat', 'access', 'opendir', 'realpath', 'exists'];
const PROMISES = ['readFile', 'readdir', 'readlink', 'open', 'stat', 'lstat', 'access', 'opendir', 'realpath'];

/** Puts `guarded` in the place of fs's `name`, keeping the real function's own properties (realpathSync.native). */
function replace(owner, name, guarded) {
  const own = Object.getOwnPropertyDescriptors(owner[name]);
  for (const key of ['length', 'name', 'prototype']) delete own[key];
  owner[name] = Object.defineProperties(guarded, own);
}

for (const name of SYNC) {
  const real = fs[name];
  if (typeof real !== 'function') continue;
  replace(fs, name, function guarded(p, ...rest) {
    const path = procPath(p);
    const e = path === undefined ? undefined : refuse(name, path);
    if (e !== undefined) {
      if (name === 'existsSync') return false;
      throw e;
    }
    return real.call(this, p, ...rest);
  });
}
for (const name of CALLBACK) {
  const real = fs[name];
  if (typeof real !== 'function') continue;
  replace(fs, name, function guarded(p, ...rest) {
    const path = procPath(p);
    const e = path === undefined ? undefined : refuse(name, path);
    if (e !== undefined) {
      const cb = rest[rest.length - 1];
      if (typeof cb === 'function') process.nextTick(() => (name === 'exists' ? cb(false) : cb(e)));
      return undefined;
    }
    return real.call(this, p, ...rest);
  });
}
for (const name of PROMISES) {
  const real = fs.promises[name];
  if (typeof real !== 'function') continue;
  replace(fs.promises, name, function guarded(p, ...rest) {
    const path = procPath(p);
    const e = path === undefined ? undefined : refuse(name, path);
    if (e !== undefined) return Promise.reject(e);
    return real.call(this, p, ...rest);
  });
}
syncBuiltinESMExports();
