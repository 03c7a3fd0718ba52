/**
 * The JavaScript runtimes runwarden serves, decided once, before the native
 * addon is loaded (kernel/native.ts): Node.js, and Bun (which implements
 * Node-API and Node's fs over the same kernel descriptors). Deno is refused,
 * with one line naming what it lacks: its `node:fs` accepts only descriptors
 * Deno opened itself, and the addon opens the run files (their descriptors go
 * to `fs.fstatSync`, `fs.readSync` …), so every read would fail with EBADF and
 * a run would be reported unreadable or skipped: a wrong answer, which is
 * worse than none.
 */

/** Why this runtime cannot run runwarden (one line), or undefined when it can. */
export function unsupportedRuntime(): string | undefined {
  const g = globalThis as { Deno?: { version?: { deno?: unknown } } };
  if (g.Deno !== undefined) {
    const v = typeof g.Deno.version?.deno === 'string' ? ` ${g.Deno.version.deno}` : '';
    return (
      `Deno${v} cannot run runwarden: Deno's node:fs does not accept file descriptors opened outside it, ` +
      'and runwarden reads the run files through descriptors its native addon opens; run it with Node.js or Bun.'
    );
  }
  return undefined;
}
