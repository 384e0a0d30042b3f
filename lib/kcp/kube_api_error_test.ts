import assert from "node:assert/strict";
import { KubeApiError, statusError, transportError } from "./kube_api_error.ts";

Deno.test("KubeApiError says notFound for a 404 and gone for a 410 or reason Expired or Gone", () => {
  const error = new KubeApiError("x", { status: 404 });
  assert.equal(error.name, "KubeApiError");
  assert.equal(error.reason, "");
  assert.equal(error.notFound, true);
  assert.equal(error.gone, false);
  assert.equal(new KubeApiError("x", { status: 410 }).gone, true);
  for (const reason of ["Expired", "Gone"]) {
    assert.equal(new KubeApiError("x", { status: 500, reason }).gone, true);
  }
});

Deno.test("statusError() takes reason and message of a Status body, or the start of any other body", () => {
  const status = statusError(
    "GET",
    "https://kcp/x",
    409,
    '{"kind":"Status","reason":"Conflict","message":"taken"}',
  );
  assert.equal(status.status, 409);
  assert.equal(status.reason, "Conflict");
  assert.equal(status.message, "GET https://kcp/x: 409: taken");
  assert.deepEqual(status.statusBody, {
    kind: "Status",
    reason: "Conflict",
    message: "taken",
  });
  const text = statusError("GET", "https://kcp/x", 502, ` ${"a".repeat(600)} `);
  assert.equal(text.reason, "");
  assert.equal(text.statusBody, undefined);
  assert.equal(
    statusError("GET", "https://kcp/x", 500, '{"message":"not a Status"}')
      .statusBody,
    undefined,
  );
  assert.equal(text.message, `GET https://kcp/x: 502: ${"a".repeat(500)}`);
  assert.equal(
    statusError("GET", "https://kcp/x", 500, "").message,
    "GET https://kcp/x: 500: (no message)",
  );
});

Deno.test("transportError() has status 0, the cause, and its text in the message", () => {
  const cause = new TypeError("connection refused");
  const error = transportError("PUT", "https://kcp/x", cause);
  assert.equal(error.status, 0);
  assert.equal(error.cause, cause);
  assert.equal(error.message, "PUT https://kcp/x: connection refused");
  assert.equal(error.unanswered, true);
});

Deno.test("KubeApiError says unanswered when no answer came, not for an answer or a request never sent", () => {
  assert.equal(
    new KubeApiError("x", { status: 0, reason: "Timeout" }).unanswered,
    true,
  );
  assert.equal(new KubeApiError("x", { status: 503 }).unanswered, false);
  assert.equal(new KubeApiError("x", { status: 403 }).unanswered, false);
  for (const reason of ["InsecureUrl", "ResponseBudgetExhausted"]) {
    assert.equal(
      new KubeApiError("x", { status: 0, reason }).unanswered,
      false,
    );
  }
});
