// Signed JSON deliveries (SPEC §9): the body is the task itself, {title, prompt, priority?, kind?,
// review?, ref?}. The delivery id and the signed request itself dedupe (inbound.ts): the same
// body signed anew (another t) is another task.
import { compiledOnFirstUse } from "../../lib/checks";
import { fieldErrors, invalid } from "../../server/errors";
import { checkKindAndReview } from "../tasks/service";
import { SignedJsonBody } from "./model";
import type { Interpretation } from "./interpret";

const check = compiledOnFirstUse(SignedJsonBody);

export function interpretSignedJson(payload: unknown): Interpretation {
  if (!check().Check(payload)) {
    const details = fieldErrors(check().Errors(payload));
    throw invalid("the delivery body is invalid", details);
  }
  const body = payload as SignedJsonBody;
  checkKindAndReview(body.kind, body.review);
  return {
    kind: "task",
    task: {
      title: body.title,
      prompt: body.prompt,
      priority: body.priority,
      kind: body.kind,
      review: body.kind === "review" ? body.review : undefined,
      ref: body.ref,
      itemKeys: [],
    },
  };
}
