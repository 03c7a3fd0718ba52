/** `runwarden serve` — not built yet (placeholder so the CLI compiles). */
import type { Command } from 'commander';

export function registerServe(_program: Command): void {
  // placeholder
}
