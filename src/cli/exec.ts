/** `runwarden exec` — not built yet (placeholder so the CLI compiles). */
import type { Command } from 'commander';

export function registerExec(_program: Command): void {
  // placeholder
}
