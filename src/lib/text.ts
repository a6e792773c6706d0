// One-line texts: titles and names. They are shown in lists, table cells and terminals, where a
// newline breaks the layout and an escape sequence (ESC [ ...) could rewrite a terminal's screen.
// Bodies declare them with Line(max); the "line" string format checks them, and the API's
// validation errors explain a failure with LINE_MESSAGE.
import { FormatRegistry, Type, type StringOptions } from "@sinclair/typebox";

/** C0 and C1 control characters, DEL, and the line and paragraph separators (U+2028, U+2029). */
const CONTROL = /[\x00-\x1f\x7f-\x9f\u2028\u2029]/;

/** True for one line of text: no control characters (tab and newline included), not only spaces. */
export const isOneLine = (text: string): boolean => !CONTROL.test(text) && text.trim().length > 0;

/** Terminal escape sequences: CSI (colours, cursor moves) and OSC (window title, clipboard). */
const ESCAPES = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?)/g;

/**
 * Text from elsewhere (a webhook, an agent's plan) made one line: escape sequences are dropped,
 * runs of whitespace and control characters become one space, and the ends are trimmed.
 */
export const oneLine = (text: string): string =>
  text
    .replace(ESCAPES, "")
    .replace(/[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+/g, " ")
    .trim();

FormatRegistry.Set("line", isOneLine);

export const LINE_MESSAGE = "must be one line of text: no control characters (newlines, tabs, escapes), not only spaces";

/** A title or a name: one line of 1..maxLength characters. */
export const Line = (maxLength: number, options: StringOptions = {}) =>
  Type.String({ ...options, minLength: 1, maxLength, format: "line", description: [options.description, "one line of text"].filter(Boolean).join("; ") });

/**
 * Free text (a prompt): anything but nothing, or only spaces and line breaks, or a NUL character
 * (U+0000), which PostgreSQL's text cannot hold: refused on either database alike, never a 500.
 */
FormatRegistry.Set("text", (text) => text.trim().length > 0 && !text.includes("\0"));

export const TEXT_MESSAGE = "must not be empty or only spaces, nor contain NUL characters (U+0000)";

/** Text from elsewhere (a webhook) made storable: NUL characters (U+0000) are dropped. */
export const withoutNul = (text: string): string => text.replaceAll("\0", "");

/**
 * Text that may be empty or span lines, as long as it can be stored: no NUL character (U+0000),
 * which PostgreSQL's text cannot hold. Refused on either database alike.
 */
export const Storable = (maxLength: number, options: StringOptions = {}) =>
  Matching("^[^\\u0000]*$", "text without NUL characters (U+0000)", { ...options, maxLength });

/**
 * A string of a pattern, told in words: a value that does not match "must be <words>" in the API's
 * message (not the regular expression), and the OpenAPI document carries the words as x-accepts.
 */
export const Matching = (pattern: string, words: string, options: StringOptions = {}) => Type.String({ ...options, pattern, "x-accepts": words });

/**
 * A title from elsewhere (an agent's plan) that is taken through oneLine: 1..maxLength characters
 * as written, of which oneLine must leave something (not only spaces, control characters, escapes).
 */
export const MadeOneLine = (maxLength: number) =>
  Type.String({ minLength: 1, maxLength, format: "made-one-line", "x-accepts": `1 to ${maxLength} characters, not only spaces and control characters (made one line)` });

FormatRegistry.Set("made-one-line", (text) => oneLine(text).length > 0);

/** A free text from elsewhere (an agent's plan) that is taken through withoutNul: 1..maxLength characters, not only whitespace and NULs. */
export const MadeStorable = (maxLength: number) =>
  Type.String({ minLength: 1, maxLength, format: "made-storable", "x-accepts": `1 to ${maxLength} characters, not only spaces and line breaks (NUL characters are dropped)` });

FormatRegistry.Set("made-storable", (text) => withoutNul(text).trim().length > 0);

/** A free text such as a prompt: 1..maxLength characters, not only whitespace. */
export const Text = (maxLength: number, options: StringOptions = {}) =>
  Type.String({ ...options, minLength: 1, maxLength, format: "text", description: [options.description, "not only whitespace, no NUL characters"].filter(Boolean).join("; ") });
