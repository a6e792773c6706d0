// Keyboard shortcuts: a single key (no modifier) while no field has the focus.
import { useEffect, useRef } from "preact/hooks";

const typing = (t: EventTarget | null) => t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));

/** Runs `action` when `key` is pressed outside a field, while the component is shown. */
export function useShortcut(key: string, action: () => void, enabled = true) {
  const latest = useRef(action);
  latest.current = action;
  useEffect(() => {
    if (!enabled) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== key || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented || typing(e.target) || document.querySelector("dialog[open]")) return;
      e.preventDefault();
      latest.current();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [key, enabled]);
}
