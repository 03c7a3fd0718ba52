#!/usr/bin/env node
// The runwarden command. The CLI itself is compiled TypeScript in dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * A failure nothing else reported (the CLI's modules failing to load, an
 * error thrown outside a command), as one line on stderr and exit 1: never
 * Node's stack trace (RUNWARDEN_DEBUG adds it). A process with no descriptor
 * to spare, where Node cannot even read the CLI's own files, is told what to do.
 */
function fail(e, doing) {
  const code = e && typeof e === 'object' ? e.code : undefined;
  const text = (e instanceof Error ? e.message : String(e)).split('\n')[0].trim();
  const short = code === 'EMFILE' || code === 'ENFILE';
  const what = short ? `this process has no file descriptor to spare (${code})${doing === undefined ? '' : ` ${doing}`}; raise its limit (ulimit -n)` : doing === undefined ? text : `cannot start: ${text}`;
  process.stderr.write(`runwarden: ${what}\n`);
  if (process.env.RUNWARDEN_DEBUG && e instanceof Error && e.stack) process.stderr.write(e.stack + '\n');
  process.exit(1);
}

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('runwarden: dist/ is missing; build it with `npm run build` (npm ci does this).\n');
  process.exit(1);
}
process.on('uncaughtException', (e) => fail(e));
process.on('unhandledRejection', (e) => fail(e));
let main;
try {
  ({ main } = await import(entry.href));
} catch (e) {
  fail(e, 'to load its own modules');
}
await main(process.argv);
