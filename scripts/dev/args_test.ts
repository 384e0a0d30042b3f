import assert from "node:assert/strict";
import { resolve } from "node:path";
import { binariesFor, HELP, parseDevArgs, wantsHelp } from "./args.ts";

Deno.test("parseDevArgs() reads --once, --shards and --kcp-version in both forms and --dir", () => {
  assert.deepEqual(parseDevArgs([]), {
    once: false,
    shards: 1,
    dir: undefined,
    kcpVersion: "v0.31.2",
  });
  assert.deepEqual(parseDevArgs(["--once", "--shards", "2", "--dir=x/y"]), {
    once: true,
    shards: 2,
    dir: resolve("x/y"),
    kcpVersion: "v0.31.2",
  });
  assert.deepEqual(parseDevArgs(["--shards=1", "--kcp-version=v0.28.1"]), {
    once: false,
    shards: 1,
    dir: undefined,
    kcpVersion: "v0.28.1",
  });
  assert.deepEqual(parseDevArgs(["--kcp-version", "v0.31.2"]), {
    once: false,
    shards: 1,
    dir: undefined,
    kcpVersion: "v0.31.2",
  });
});

Deno.test("parseDevArgs() says what is wrong with a bad argument", () => {
  for (
    const [args, message] of [
      [["--bogus"], "Unknown argument --bogus"],
      [["--shards=3"], "--shards must be 1 or 2, not '3'"],
      [["--shards", "0"], "--shards must be 1 or 2, not '0'"],
      [["--shards"], "--shards needs a value: 1 or 2"],
      [["--shards", "--once"], "--shards must be 1 or 2, not '--once'"],
      [["--dir="], "--dir needs a path"],
      [
        ["--kcp-version=v0.32.3"],
        "--kcp-version must be v0.31.2 or v0.28.1, not 'v0.32.3'",
      ],
      [["--kcp-version"], "--kcp-version must be v0.31.2 or v0.28.1"],
    ] as const
  ) {
    assert.equal(parseDevArgs(args), message, args.join(" "));
  }
});

Deno.test("wantsHelp() finds --help or -h among other arguments", () => {
  assert.equal(wantsHelp(["--once", "--help"]), true);
  assert.equal(wantsHelp(["-h", "--bogus"]), true);
  assert.equal(wantsHelp(["--once"]), false);
  assert.match(HELP, /^Usage: deno task dev /);
});

Deno.test("binariesFor() names the kcp release, and adds the sharded kcp's binaries for --shards 2", () => {
  assert.deepEqual(binariesFor({ shards: 1, kcpVersion: "v0.28.1" }), [
    "--kcp-version=v0.28.1",
    "kcp",
    "kubectl",
  ]);
  assert.deepEqual(binariesFor({ shards: 2, kcpVersion: "v0.31.2" }), [
    "--kcp-version=v0.31.2",
    "kcp",
    "kubectl",
    "kcp-front-proxy",
    "cache-server",
  ]);
});
