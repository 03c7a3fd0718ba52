/** `runwarden status` — not built yet (placeholder so the CLI compiles). */
import type { Command } from 'commander';

export function registerStatus(_program: Command): void {
  // placeholder
}
