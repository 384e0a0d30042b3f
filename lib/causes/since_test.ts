import assert from "node:assert/strict";
import { isRfc3339, MAX_SINCE, sinceOf } from "./since.ts";

Deno.test("isRfc3339() takes a date-time with a zone, and nothing else", () => {
  for (
    const good of [
      "2026-11-29T12:00:00Z",
      "2026-11-29t12:00:00z",
      "2026-11-29T12:00:00.123456Z",
      "2026-11-29T12:00:00+02:00",
    ]
  ) assert.equal(isRfc3339(good), true, good);
  for (
    const bad of [
      undefined,
      42,
      "",
      "yesterday",
      "2026-11-29",
      "2026-11-29T12:00:00",
      "2026-11-29 12:00:00Z",
      "2026-13-45T12:00:00Z",
      "2026-11-29T12:00:00Z\u202e",
      `2026-11-29T12:00:00.${"1".repeat(MAX_SINCE)}Z`,
    ]
  ) assert.equal(isRfc3339(bad), false, String(bad));
});

Deno.test("sinceOf() reads a valid creationTimestamp, else undefined", () => {
  assert.equal(
    sinceOf({ metadata: { creationTimestamp: "2026-11-29T12:00:00Z" } }),
    "2026-11-29T12:00:00Z",
  );
  assert.equal(sinceOf({ metadata: { creationTimestamp: "soon" } }), undefined);
  assert.equal(sinceOf({ metadata: { creationTimestamp: 1 } }), undefined);
  assert.equal(sinceOf({ metadata: null }), undefined);
  assert.equal(sinceOf({}), undefined);
  assert.equal(sinceOf(null), undefined);
  assert.equal(sinceOf("x"), undefined);
});
