import assert from "node:assert/strict";
import { KcpRequestError } from "./kcp_server.ts";
import { failureStatus } from "./sharded_harness_world.ts";

Deno.test("failureStatus answers a failed request's status and rethrows other errors", async () => {
  assert.equal(
    await failureStatus(Promise.reject(new KcpRequestError("403", 403, {}))),
    403,
  );
  await assert.rejects(
    failureStatus(Promise.reject(new RangeError("no"))),
    RangeError,
  );
  await assert.rejects(
    failureStatus(Promise.resolve("ok")),
    /the request succeeded/,
  );
});
