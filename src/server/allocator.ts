// The memory allocator's settings for `ao serve`. Bun's allocator (its fork of mimalloc) returns
// to the system, each time the event loop goes idle, the free blocks inside pages still in use
// ("hole purging"). A busy server's loop goes idle between requests thousands of times a second;
// each purge is an madvise whose TLB shootdown interrupts the other core, and the memory faults back
// in when it is used again. On the benchmark machine that cost 12-19% of the server's CPU per task
// lifecycle (BENCHMARKS.md, "The allocator's hole purging"). Whole free pages are still returned
// to the system after mimalloc's purge delay, so an idle server still gives memory back.
//
// mimalloc reads its options from the environment once, when the process starts, so the server
// executes itself again (the same process id and open files) with MIMALLOC_PURGE_HOLES=0, unless
// the variable is already set: an operator's own value, or this second start.

const ALLOCATOR_ENV: Record<string, string> = { MIMALLOC_PURGE_HOLES: "0" };

/** The argv that starts this program again: the executable, or Bun with its flags and the script. */
function ownArgv(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  const script = compiled ? [] : [...process.execArgv, process.argv[1]!];
  return [process.execPath, ...script, ...process.argv.slice(2)];
}

/**
 * Replaces this process with itself under ALLOCATOR_ENV. Returns, doing nothing, when the
 * variables are set already, and when the system cannot execute (the server then starts with
 * Bun's defaults: slower under load, otherwise the same).
 */
export function execWithServerAllocator(env: NodeJS.ProcessEnv = process.env): void {
  if (Object.keys(ALLOCATOR_ENV).every((k) => env[k] !== undefined)) return;
  if (typeof process.execve !== "function" || process.platform === "win32") return;
  try {
    process.execve(process.execPath, ownArgv(), { ...ALLOCATOR_ENV, ...env });
  } catch {
    // e.g. the executable was replaced or removed since it started: go on as we are.
  }
}
