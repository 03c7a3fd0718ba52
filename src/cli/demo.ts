/** `runwarden demo` — not built yet (placeholder so the CLI compiles). */
import type { Command } from 'commander';

export function registerDemo(_program: Command): void {
  // placeholder
}
