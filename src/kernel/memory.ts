/**
 * Giving the allocator's free memory back to the kernel, for a long-lived
 * process after a burst of work (serve after its first listing).
 *
 * Why: a worker thread that ends leaves its malloc arena behind with the
 * thread's freed memory still resident; glibc returns it only when asked
 * (serve's list worker leaves one arena; docs/benchmarks.md has its size).
 * This is a request, never needed for correctness: where the platform has
 * no such call, or the addon predates it, nothing happens.
 */
import { native } from './native.js';

/** Asks the allocator to return its free memory to the kernel; true when some was. Never throws. */
export function releaseFreeMemory(): boolean {
  const n = native();
  return typeof n.releaseFreeMemory === 'function' ? n.releaseFreeMemory() : false;
}
