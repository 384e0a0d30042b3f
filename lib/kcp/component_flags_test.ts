import assert from "node:assert/strict";
import {
  ALLOW_INSECURE_HTTP_FLAG,
  API_EXPORT_NAME_FLAG,
  DEFAULT_API_EXPORT_NAME,
  EXPORT_RELIST_INTERVAL_FLAG,
  kcpBaseHostFlag,
  KUBECONFIG_FLAG,
  LOG_LEVEL_FLAG,
  parseComponentOptions,
  SERVICE_BIND_FLAGS,
} from "./component_flags.ts";
import { type FlagSpec, parseFlags } from "../runtime/mod.ts";

const SPECS: readonly FlagSpec[] = [
  KUBECONFIG_FLAG,
  API_EXPORT_NAME_FLAG,
  kcpBaseHostFlag("testing"),
  EXPORT_RELIST_INTERVAL_FLAG,
  ...SERVICE_BIND_FLAGS,
  LOG_LEVEL_FLAG,
  ALLOW_INSECURE_HTTP_FLAG,
];

function parse(args: string[], env: Record<string, string> = {}) {
  return parseComponentOptions(
    parseFlags(args, SPECS, { env: (name) => env[name] }),
  );
}

Deno.test("parseComponentOptions() gives the defaults, with the kubeconfig from KUBECONFIG", () => {
  assert.deepEqual(parse([], { KUBECONFIG: "/k" }), {
    kubeconfig: "/k",
    apiExportName: DEFAULT_API_EXPORT_NAME,
    healthBind: { hostname: "0.0.0.0", port: 8081 },
    metricsBind: { hostname: "0.0.0.0", port: 8080 },
    logLevel: "info",
    allowInsecureHttp: false,
    exportRelistIntervalMs: 300_000,
  });
});

Deno.test("parseComponentOptions() takes --export-relist-interval of 0s or at least 1s", () => {
  const interval = (value: string) =>
    parse(["--kubeconfig=/k", `--export-relist-interval=${value}`])
      .exportRelistIntervalMs;
  assert.equal(interval("10s"), 10_000);
  assert.equal(interval("1s"), 1_000);
  assert.equal(interval("0s"), 0);
  assert.equal(interval("0"), 0);
  assert.throws(
    () => interval("500ms"),
    /Cannot parse --export-relist-interval: want 0s or at least 1s: current value is '500ms'/,
  );
  assert.throws(
    () => interval("soon"),
    /Cannot parse --export-relist-interval/,
  );
  assert.throws(() => interval("-1s"), /Cannot parse --export-relist-interval/);
});

Deno.test("parseComponentOptions() allows plain http only when --allow-insecure-http says so", () => {
  assert.equal(
    parse(["--kubeconfig=/k", "--allow-insecure-http"]).allowInsecureHttp,
    true,
  );
  assert.equal(parse(["--kubeconfig=/k"]).allowInsecureHttp, false);
});

Deno.test("parseComponentOptions() normalizes --kcp-base-host and leaves out a disabled listener", () => {
  const options = parse([
    "--kubeconfig=/k",
    "--kcp-base-host=https://proxy.example:6443/clusters/root",
    "--metrics-bind-address=0",
    "--log-level=debug",
  ]);
  assert.equal(options.kcpBaseHost, "https://proxy.example:6443");
  assert.equal(options.metricsBind, undefined);
  assert.equal(options.logLevel, "debug");
});

Deno.test("parseComponentOptions() names the flag that is missing or malformed", () => {
  assert.throws(() => parse([]), /--kubeconfig/);
  assert.throws(
    () => parse(["--kubeconfig=/k", "--log-level=loud"]),
    /Cannot parse --log-level/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--kcp-base-host=not a url"]),
    /Cannot parse --kcp-base-host/,
  );
});
