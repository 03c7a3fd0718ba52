// Copies the browser app (src/serve/public/) to dist/serve/public/, where the
// built server reads it (src/serve/static.ts). Part of `npm run build`, after
// tsc; the destination is replaced, so a file deleted from src/ does not linger.
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const from = fileURLToPath(new URL('../src/serve/public/', import.meta.url));
const to = fileURLToPath(new URL('../dist/serve/public/', import.meta.url));

rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true });
