/**
 * vitest's global setup: in the XNU-model lane (RUNWARDEN_ADDON naming the model build,
 * test/helpers/prereq.ts onDarwinModel), every Node process of the lane loads
 * test/helpers/no-proc.mjs, through NODE_OPTIONS, which the workers and every process they start
 * inherit; runwarden's own reads of /proc then fail as on a Mac and are written to one log, and the
 * teardown fails the run naming each one. Outside the model lane it does nothing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onDarwinModel } from './prereq.js';

export default function setup(): (() => void) | undefined {
  if (!onDarwinModel()) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'rw-proc-guard-'));
  const log = join(dir, 'reads.log');
  writeFileSync(log, '');
  const guard = new URL('./no-proc.mjs', import.meta.url).href;
  process.env['RUNWARDEN_PROC_LOG'] = log;
  process.env['NODE_OPTIONS'] = `${process.env['NODE_OPTIONS'] ?? ''} --import ${guard}`.trim();
  return () => {
    const reads = readFileSync(log, 'utf8');
    rmSync(dir, { recursive: true, force: true });
    if (reads !== '') throw new Error(`runwarden read /proc in the XNU-model lane, where darwin has none (test/helpers/no-proc.mjs):\n${reads}`);
  };
}
