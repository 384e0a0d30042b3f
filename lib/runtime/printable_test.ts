import assert from "node:assert/strict";
import { printable } from "./printable.ts";

Deno.test("printable() writes control and direction characters as escapes", () => {
  assert.equal(
    printable("a\u001b[31mb\u202ec\nd"),
    "a\\u{1b}[31mb\\u{202e}c\\u{a}d",
  );
  assert.equal(printable("x".repeat(10), 4), "xxxx...");
});
