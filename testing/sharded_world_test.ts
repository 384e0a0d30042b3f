import assert from "node:assert/strict";
import { shardsOfUrls } from "./sharded_world.ts";

Deno.test("shardsOfUrls names the shard each URL points at, sorted", () => {
  const shards = {
    root: { name: "root", baseUrl: "https://127.0.0.1:6443" },
    "shard-1": { name: "shard-1", baseUrl: "https://127.0.0.1:6444" },
  } as const;
  assert.deepEqual(
    shardsOfUrls(shards, [
      "https://127.0.0.1:6444/services/apiexport/abc/x",
      "https://127.0.0.1:6443/services/apiexport/abc/x",
    ]),
    ["root", "shard-1"],
  );
  assert.deepEqual(
    shardsOfUrls(shards, ["https://127.0.0.1:6500/clusters/root"]),
    [undefined],
  );
});
