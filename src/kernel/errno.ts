/** errno numbers to their names, from the OS constants (one table for the kernel seam and the probe). */
import { constants as osConstants } from 'node:os';

let errnoNames: Map<number, string> | undefined;

/** errno number to name (ENOENT …), built on first use from the OS constants. */
export function errnoName(errno: number): string {
  if (errnoNames === undefined) {
    errnoNames = new Map();
    for (const [name, value] of Object.entries(osConstants.errno)) {
      if (!errnoNames.has(value)) errnoNames.set(value, name);
    }
  }
  return errnoNames.get(errno) ?? `errno ${errno}`;
}
