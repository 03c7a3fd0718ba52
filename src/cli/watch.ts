/** `runwarden watch` — not built yet (placeholder so the CLI compiles). */
import type { Command } from 'commander';

export function registerWatch(_program: Command): void {
  // placeholder
}
