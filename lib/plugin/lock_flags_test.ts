import assert from "node:assert/strict";
import { PluginError } from "./context.ts";
import { parseExpiry, parseOperations, parseTimeout } from "./lock_flags.ts";

const NOW = { now: Date.parse("2026-12-01T16:00:00Z") };

function usageError(pattern: RegExp): (error: unknown) => boolean {
  return (error) =>
    error instanceof PluginError && error.exitCode === 2 &&
    pattern.test(error.message);
}

Deno.test("parseExpiry() sets expiresAt from --for, from now, rounded up to a second", () => {
  assert.equal(parseExpiry({ for: "2h" }, NOW), "2026-12-01T18:00:00Z");
  assert.equal(parseExpiry({ for: "30s" }, NOW), "2026-12-01T16:00:30Z");
  assert.equal(
    parseExpiry({ for: "1500ms" }, NOW),
    "2026-12-01T16:00:02Z",
  );
  assert.equal(
    parseExpiry({ for: "1s" }, { now: NOW.now + 1 }),
    "2026-12-01T16:00:02Z",
  );
  assert.equal(parseExpiry({}, NOW), undefined);
});

Deno.test("parseExpiry() takes --until as an RFC 3339 time ahead of now", () => {
  assert.equal(
    parseExpiry({ until: "2026-12-01T18:00:00Z" }, NOW),
    "2026-12-01T18:00:00Z",
  );
  assert.equal(
    parseExpiry({ until: "2026-12-01t19:00:00.5+01:00" }, NOW),
    "2026-12-01T19:00:00.5+01:00",
  );
});

Deno.test("parseExpiry() refuses both flags, a non-positive --for and a past or malformed --until, as usage errors", () => {
  const cases: [Parameters<typeof parseExpiry>[0], RegExp][] = [
    [{ for: "1h", until: "2026-12-02T00:00:00Z" }, /give one/],
    [{ for: "0s" }, /--for: .*positive/],
    [{ for: "-5m" }, /--for: /],
    [{ for: "2 hours" }, /--for: /],
    [{ until: "2026-12-01T16:00:00Z" }, /--until .* has passed/],
    [
      { until: "2020-01-01T00:00:00Z" },
      /has passed \(now is 2026-12-01T16:00:00.000Z\)/,
    ],
    [{ until: "tomorrow" }, /--until must be an RFC 3339 time/],
    [{ until: "2026-12-02 00:00:00" }, /--until must be an RFC 3339 time/],
    [{ until: "2026-12-02T00:00:00" }, /--until must be an RFC 3339 time/],
  ];
  for (const [flags, pattern] of cases) {
    assert.throws(
      () => parseExpiry(flags, NOW),
      usageError(pattern),
      JSON.stringify(flags),
    );
  }
});

Deno.test("parseOperations() and parseTimeout() read their flags or refuse them as usage errors", () => {
  assert.deepEqual(parseOperations("update,DELETE,Update"), [
    "Update",
    "Delete",
  ]);
  assert.throws(() => parseOperations("Create"), usageError(/--operations/));
  assert.equal(parseTimeout("0"), 0);
  assert.equal(parseTimeout("90s"), 90_000);
  assert.throws(() => parseTimeout("soon"), usageError(/--timeout/));
});
