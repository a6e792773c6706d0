// JSON bodies are UTF-8 (SPEC): bytes that are not are refused (400), never decoded with U+FFFD in
// their place and stored altered, as Bun's Request.json() and .text() would.
import { invalid } from "./errors";

const decoder = new TextDecoder("utf-8", { fatal: true });

/** The text of these bytes, or a 400 naming invalid UTF-8 (a lone byte, a truncated or overlong sequence, a surrogate). */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw invalid("the body is not valid UTF-8");
  }
}

/** A request's body as text, refused unless it is UTF-8. */
export const bodyText = async (request: Request): Promise<string> => decodeUtf8(await request.bytes());

async function strictJson(this: Request): Promise<unknown> {
  return JSON.parse(await bodyText(this));
}

/**
 * Makes this request's json() refuse invalid UTF-8: Elysia's JSON parser (1.4) calls it. A parser
 * of ao's own would not do: Elysia honours a route's `parse: "none"` only while it is the route's
 * sole parser (the artifact upload would be refused), and a route whose parser is a function has
 * its body left out of the OpenAPI document. The check costs under a microsecond a body (bytes()
 * and a fatal decode instead of Bun's native json()).
 */
export function refuseInvalidUtf8(request: Request): void {
  (request as { json: () => Promise<unknown> }).json = strictJson;
}
