/**
 * errno numbers to their names (one table for the kernel seam and the probe). The numbers the addon
 * answers are named by the addon's own table (its `errnos` export, from the <errno.h> it was built
 * with: darwin's on a Mac and in the XNU model, linux's on linux), once the addon is loaded; before
 * that, by the OS constants of the running Node, which are the same table on a real system.
 */
import { constants as osConstants } from 'node:os';
import { loadedAddonPath, native } from './native.js';

let errnoNames: Map<number, string> | undefined;
let fromAddon = false;

/** errno number to name (ENOENT …): the first name listed for the number. */
export function errnoName(errno: number): string {
  if (errnoNames === undefined || (!fromAddon && loadedAddonPath() !== undefined)) {
    const addon = loadedAddonPath() === undefined ? undefined : native().errnos;
    fromAddon = addon !== undefined;
    errnoNames = new Map();
    for (const [name, value] of Object.entries(addon ?? osConstants.errno)) {
      if (!errnoNames.has(value)) errnoNames.set(value, name);
    }
  }
  return errnoNames.get(errno) ?? `errno ${errno}`;
}
