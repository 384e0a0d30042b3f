import assert from "node:assert/strict";
import {
  type FlagSpec,
  parseBindAddress,
  parseDuration,
  parseDurationOrZero,
  parseFlag,
  parseFlags,
  parseServiceBinds,
  requiredFlag,
  usage,
} from "./flags.ts";

const SPECS: FlagSpec[] = [
  { name: "kubeconfig", help: "Path to a kubeconfig", env: "KUBECONFIG" },
  { name: "bind", help: "Listen here", default: ":9443" },
  { name: "leader-elect", help: "Elect a leader", boolean: true },
];

Deno.test("parseFlags() takes --name=value and --name value, then env, then defaults", () => {
  const env = (name: string) =>
    ({ KUBECONFIG: "/env/config" } as Record<string, string>)[name];
  const a = parseFlags(["--kubeconfig=/a", "--bind", ":1"], SPECS, { env });
  assert.deepEqual(a.values, {
    kubeconfig: "/a",
    bind: ":1",
    "leader-elect": "false",
  });
  assert.deepEqual([...a.given].sort(), ["bind", "kubeconfig"]);
  const b = parseFlags(["--leader-elect"], SPECS, { env });
  assert.deepEqual(b.values, {
    kubeconfig: "/env/config",
    bind: ":9443",
    "leader-elect": "true",
  });
  const c = parseFlags([], SPECS, { env: () => undefined });
  assert.equal(c.values.kubeconfig, undefined);
  assert.equal(c.help, false);
});

Deno.test("parseFlags() recognises --help and -h", () => {
  assert.equal(parseFlags(["--help"], SPECS).help, true);
  assert.equal(parseFlags(["-h"], SPECS).help, true);
});

Deno.test("parseFlags() rejects unknown flags, missing values and positionals", () => {
  assert.throws(
    () => parseFlags(["--nope=1"], SPECS),
    /Cannot parse flags: .*nope/,
  );
  assert.throws(() => parseFlags(["--bind"], SPECS), TypeError);
  assert.throws(() => parseFlags(["extra"], SPECS), TypeError);
});

Deno.test("usage() lists every flag with its default and environment variable", () => {
  const text = usage("webhook", "Serves.", SPECS);
  assert.match(text, /^Usage: webhook \[flags\]/);
  assert.match(
    text,
    /--kubeconfig=<value>\n\s+Path to a kubeconfig \(env KUBECONFIG\)/,
  );
  assert.match(text, /--bind=<value>\n\s+Listen here \(default ":9443"\)/);
  assert.match(text, /--leader-elect\n/);
  assert.match(text, /--help, -h/);
});

Deno.test("parseBindAddress() reads host:port forms and 0", () => {
  assert.deepEqual(parseBindAddress(":9443"), {
    hostname: "0.0.0.0",
    port: 9443,
  });
  assert.deepEqual(parseBindAddress("127.0.0.1:8080"), {
    hostname: "127.0.0.1",
    port: 8080,
  });
  assert.deepEqual(parseBindAddress("[::1]:8081"), {
    hostname: "::1",
    port: 8081,
  });
  assert.deepEqual(parseBindAddress("localhost:0"), {
    hostname: "localhost",
    port: 0,
  });
  assert.equal(parseBindAddress("0"), undefined);
  for (const bad of ["9443", "host", ":", ":70000", "a:b:1", ""]) {
    assert.throws(
      () => parseBindAddress(bad),
      /Cannot parse bind address/,
      bad,
    );
  }
});

Deno.test("parseDurationOrZero() reads 0 with or without a unit, and durations as parseDuration does", () => {
  for (const zero of ["0", "0s", "0ms", "0m", "0h", "0.0s"]) {
    assert.equal(parseDurationOrZero(zero), 0, zero);
  }
  assert.equal(parseDurationOrZero("2m"), 120_000);
  for (const bad of ["", "-1s", "s", "0x", "1d", "00.s"]) {
    assert.throws(() => parseDurationOrZero(bad), TypeError, bad);
  }
});

Deno.test("parseDuration() reads ms, s, m and h and rejects the rest", () => {
  assert.equal(parseDuration("500ms"), 500);
  assert.equal(parseDuration("7s"), 7000);
  assert.equal(parseDuration("1.5s"), 1500);
  assert.equal(parseDuration("2m"), 120_000);
  assert.equal(parseDuration("1h"), 3_600_000);
  for (const bad of ["7", "0s", "-1s", "s", "7 s", "7d"]) {
    assert.throws(() => parseDuration(bad), /Cannot parse duration/, bad);
  }
});

Deno.test("parseFlag() returns the parsed value and names the flag in an error", () => {
  assert.equal(parseFlag("list-timeout", () => parseDuration("7s")), 7000);
  assert.throws(
    () => parseFlag("list-timeout", () => parseDuration("soon")),
    {
      name: "TypeError",
      message:
        "Cannot parse --list-timeout: Cannot parse duration: want a positive number with ms, s, m or h: current value is 'soon'",
    },
  );
});

Deno.test("parseFlags() takes switches as Go does: --name, --name=true, --name=false, the last wins", () => {
  const specs = [{ name: "leader-elect", help: "", boolean: true }];
  const value = (args: string[]) =>
    parseFlags(args, specs, { env: () => undefined }).values["leader-elect"];
  assert.equal(value([]), "false");
  assert.equal(value(["--leader-elect"]), "true");
  assert.equal(value(["--leader-elect=false"]), "false");
  assert.equal(value(["--leader-elect", "--leader-elect=false"]), "false");
  assert.equal(value(["--leader-elect=false", "--leader-elect=true"]), "true");
  assert.throws(() => value(["--leader-elect=yes"]), {
    name: "TypeError",
    message:
      "Cannot parse --leader-elect: want true or false: current value is 'yes'",
  });
});

Deno.test("requiredFlag() returns the value or names the flag and its variable", () => {
  const specs = [{ name: "kubeconfig", help: "", env: "KUBECONFIG" }];
  const given = parseFlags(["--kubeconfig=/k"], specs, {
    env: () => undefined,
  });
  assert.equal(requiredFlag(given, "kubeconfig", { env: "KUBECONFIG" }), "/k");
  const missing = parseFlags([], specs, { env: () => undefined });
  assert.throws(
    () => requiredFlag(missing, "kubeconfig", { env: "KUBECONFIG" }),
    {
      name: "TypeError",
      message: "Cannot start: --kubeconfig (or KUBECONFIG) is required",
    },
  );
  assert.throws(() => requiredFlag(missing, "kubeconfig"), {
    message: "Cannot start: --kubeconfig is required",
  });
});

Deno.test("parseServiceBinds() parses both listeners and leaves out a disabled one", () => {
  const specs = [
    { name: "health-probe-bind-address", help: "", default: ":8081" },
    { name: "metrics-bind-address", help: "", default: ":8080" },
  ];
  const parse = (args: string[]) =>
    parseServiceBinds(parseFlags(args, specs, { env: () => undefined }));
  assert.deepEqual(parse([]), {
    healthBind: { hostname: "0.0.0.0", port: 8081 },
    metricsBind: { hostname: "0.0.0.0", port: 8080 },
  });
  assert.deepEqual(parse(["--metrics-bind-address=0"]), {
    healthBind: { hostname: "0.0.0.0", port: 8081 },
  });
  assert.throws(() => parse(["--health-probe-bind-address=nope"]), {
    message: /^Cannot parse --health-probe-bind-address: /,
  });
});
