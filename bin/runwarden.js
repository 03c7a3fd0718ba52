#!/usr/bin/env node
// The runwarden command. The CLI itself is compiled TypeScript in dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('runwarden: dist/ is missing; build it with `npm run build` (npm ci does this).\n');
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv);
