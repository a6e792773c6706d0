// Small hooks every page uses: following the live socket for as long as a component is shown,
// running an action with a busy flag, and the ticking clock relative times read.
import { signal, useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { follow, type Follower, type LiveState } from "../app/live";
import type { Signal } from "@preact/signals";

/**
 * Follows an organization (taskId null) or a task while the component is shown; the handlers
 * may change between renders (the latest ones are called). Answers the subscription's state.
 */
export function useFollow(orgId: string | null, taskId: string | null, handlers: Follower): Signal<LiveState> {
  const latest = useRef(handlers);
  latest.current = handlers;
  const state = useSignal<LiveState>("connecting…");
  useEffect(() => {
    if (!orgId) return;
    const f = follow(orgId, taskId, {
      subscribed: () => latest.current.subscribed?.(),
      task: (t) => latest.current.task?.(t),
      event: (id, e) => latest.current.event?.(id, e),
      worker: (w) => latest.current.worker?.(w),
    });
    // Mirror the shared subscription's state into this component's signal.
    const unmirror = f.state.subscribe((v) => (state.value = v));
    return () => {
      unmirror();
      f.stop();
    };
  }, [orgId, taskId]);
  return state;
}

/**
 * `fn` once, `ms` after the first of a burst of calls (a fleet of workers connecting at once makes
 * one re-read, not fifty); nothing runs after the component is gone.
 */
export function useCoalesced(fn: () => void, ms: number): () => void {
  const latest = useRef(fn);
  latest.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  return () => {
    timer.current ??= setTimeout(() => {
      timer.current = null;
      latest.current();
    }, ms);
  };
}

/**
 * A busy flag and a runner: `run(work)` sets it while `work` runs (a second run meanwhile is
 * ignored), and answers what `work` answered.
 */
export function useBusy(): [Signal<boolean>, <R>(work: () => Promise<R>) => Promise<R | undefined>] {
  const busy = useSignal(false);
  const run = async <R,>(work: () => Promise<R>) => {
    if (busy.value) return undefined;
    busy.value = true;
    try {
      return await work();
    } finally {
      busy.value = false;
    }
  };
  return [busy, run];
}

/** Now, to the half minute: relative times ("3 min ago") re-render when it ticks. */
export const now = signal(Date.now());
setInterval(() => (now.value = Date.now()), 30_000);
