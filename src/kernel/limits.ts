/**
 * The descriptors this process may open (RLIMIT_NOFILE), and the share of them
 * its watches may hold (CONTRACT §5.7).
 *
 * Invariants, and why:
 * - The limit is the kernel's answer (getrlimit(2), asked of the addon at each
 *   call: a process may lower it while it runs), never a guess: `serve`
 *   started under `ulimit -n 1024` or `prlimit --nofile=256:256` has that many
 *   and no more, and a descriptor opened past it fails with EMFILE.
 * - It is the limit the kernel enforces, which is not always the one
 *   getrlimit(2) answers: darwin caps every process at `kern.maxfilesperproc`
 *   whatever its RLIMIT_NOFILE (xnu bsd/kern/kern_resource.c: "The real
 *   NOFILE limits enforced by the kernel is capped at MIN(RLIMIT_NOFILE,
 *   maxfilesperproc)"), and Node raises the soft limit at start-up to about a
 *   million there, far past that cap. So the soft limit here is the smaller
 *   of the two.
 * - Watches that hold a descriptor (pidfd exit watches on linux, kqueue
 *   directory and file watches on darwin) take at most
 *   {@link watchDescriptorShare}: half of what is left of the soft limit after
 *   {@link DESCRIPTOR_RESERVE}. The reserve and the other half stay free for
 *   the process's own work (probes, stream reads, worker threads, HTTP
 *   connections, Node's own descriptors), so a root of any size never brings
 *   a probe to EMFILE, which would read as unknown and keep a dead holder's
 *   run RUNNING. Past the share, runs are re-probed instead (live/).
 */
import { native } from './native.js';

/** Descriptors a process keeps for Node's own, probes, stream reads and worker threads, whatever else it holds. */
export const OWN_DESCRIPTORS = 64;

/** Descriptors kept out of the watches' share for the process's own work: a server's connections (serve's cap, 128) and {@link OWN_DESCRIPTORS}. */
export const DESCRIPTOR_RESERVE = 128 + OWN_DESCRIPTORS;

/**
 * This process's RLIMIT_NOFILE, soft and hard (Infinity for RLIM_INFINITY), each no more than the
 * kernel's own cap where it has one (darwin kern.maxfilesperproc); undefined from an addon without
 * the call.
 */
export function descriptorLimit(): { soft: number; hard: number } | undefined {
  const n = native();
  if (typeof n.descriptorLimit !== 'function') return undefined;
  const { soft, hard, perProcess } = n.descriptorLimit();
  const cap = perProcess ?? Infinity;
  return { soft: Math.min(soft, cap), hard: Math.min(hard, cap) };
}

/**
 * Descriptors the watches of this process may hold together at most under the soft limit
 * `soft` (default: this process's): half of what is left after {@link DESCRIPTOR_RESERVE}, at
 * least 0. Infinity when the limit is unknown or unlimited (the watchers' own budgets still hold).
 */
export function watchDescriptorShare(soft: number | undefined = descriptorLimit()?.soft): number {
  if (soft === undefined || !Number.isFinite(soft)) return Infinity;
  return Math.max(0, Math.floor((soft - DESCRIPTOR_RESERVE) / 2));
}
