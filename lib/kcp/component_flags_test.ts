import assert from "node:assert/strict";
import {
  ALLOW_INSECURE_HTTP_FLAG,
  API_EXPORT_NAME_FLAG,
  DEFAULT_API_EXPORT_NAME,
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
  });
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
