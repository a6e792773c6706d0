// Branch, tag and commit names as git accepts them (git check-ref-format --branch). They travel to
// a worker's git command line, so one that starts with "-" would be read as an option.
import { FormatRegistry, Type, type StringOptions } from "@sinclair/typebox";

/** Why `name` is not a valid ref name, or null when it is. */
export function refNameProblem(name: string): string | null {
  if (name.startsWith("-")) return 'must not start with "-"';
  if (name === "@") return 'must not be "@"';
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return "must not contain spaces, control characters or any of ~ ^ : ? * [ \\";
  if (name.includes("..")) return 'must not contain ".."';
  if (name.includes("@{")) return 'must not contain "@{"';
  if (name.startsWith("/") || name.endsWith("/") || name.includes("//")) return 'must not start or end with "/" or contain "//"';
  if (name.endsWith(".")) return 'must not end with "."';
  for (const part of name.split("/")) {
    if (part.startsWith(".")) return 'no part between slashes may start with "."';
    if (part.endsWith(".lock")) return 'no part between slashes may end with ".lock"';
  }
  return null;
}

FormatRegistry.Set("git-ref", (name) => refNameProblem(name) === null);

export const REF_MESSAGE =
  'must be a branch, tag or commit name as git accepts it: not starting with "-", no spaces, control characters, ~ ^ : ? * [ \\, "..", "@{" or "//", no part starting with "." or ending with ".lock"';

/** The longest ref name taken. */
export const MAX_REF_LENGTH = 255;

/** A branch, tag or commit name. */
export const RefName = (options: StringOptions = {}) =>
  Type.String({ ...options, minLength: 1, maxLength: MAX_REF_LENGTH, format: "git-ref", description: [options.description, "a git branch, tag or commit name"].filter(Boolean).join("; ") });
