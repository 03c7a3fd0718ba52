/** `runwarden runs` — not built yet (placeholder so the CLI compiles). */
import type { Command } from 'commander';

export function registerRuns(_program: Command): void {
  // placeholder
}
