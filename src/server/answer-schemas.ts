// Schemas of what the API answers with (they document; routes do not check their own answers).
import { Type, type IntegerOptions } from "@sinclair/typebox";

/**
 * An integer in an answer. Not Elysia's t.Integer, which also takes a string of digits so that a
 * query parameter's text can be coerced (query routes keep it): with it the OpenAPI document gave
 * every integer of every answer as "a string of format integer, default 0, or an integer", and each
 * one compiled a checker when its module loaded, at every start.
 */
export const Int = (options?: IntegerOptions) => Type.Integer(options);
