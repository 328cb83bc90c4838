import { z } from "zod";
import { isJsonValue, type JsonValue } from "./json";

/**
 * Any JSON value, as a zod schema for the messages and files that hold one (eval cases, scripted
 * fixtures, runner and debug messages): isJsonValue's one walk (json.ts). The recursive `z.lazy`
 * union each of them had before said the same thing, slower, and built its schema once on first
 * use, which also hid its mutants from the mutation runs (the runner keeps a module loaded).
 */
export const JsonSchema: z.ZodType<JsonValue> = z.custom<JsonValue>(
  (v) => isJsonValue(v),
  "must be a JSON value: null, a boolean, a finite number, a string, or arrays and plain objects of them",
);
