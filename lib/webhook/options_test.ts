import assert from "node:assert/strict";
import { parseWebhookOptions, type WebhookOptions } from "./options.ts";

const noEnv = { env: () => undefined };

function parse(args: string[]): WebhookOptions {
  const result = parseWebhookOptions(args, noEnv);
  assert.equal(result.help, false);
  return (result as { options: WebhookOptions }).options;
}

Deno.test("parseWebhookOptions() applies the reference's defaults", () => {
  assert.deepEqual(parse(["--kubeconfig=/k"]), {
    kubeconfig: "/k",
    apiExportName: "dependencies.opendefense.cloud",
    webhookBind: { hostname: "0.0.0.0", port: 9443 },
    tlsCertDir: "/etc/webhook-tls",
    tlsReloadIntervalMs: 10_000,
    healthBind: { hostname: "0.0.0.0", port: 8081 },
    metricsBind: { hostname: "0.0.0.0", port: 8080 },
    listTimeoutMs: 7000,
    teardownOrderMs: 120_000,
    lockExpirySkewMs: 5_000,
    bindingsCacheTtlMs: 5_000,
    listPageSize: 500,
    maxListPageBytes: 8 * 1024 * 1024,
    maxListBytesInFlight: 32 * 1024 * 1024,
    maxConcurrentReviews: 4,
    maxReviewBytesInFlight: 8 * 1024 * 1024,
    reviewQueueTimeoutMs: 2_000,
    skipProtectionMode: "annotation",
    tlsHandshakeTimeoutMs: 5_000,
    readHeaderTimeoutMs: 5_000,
    readTimeoutMs: 10_000,
    idleTimeoutMs: 60_000,
    maxConnections: 1_000,
    shutdownTimeoutMs: 8_000,
    holds: false,
    holdsMax: 1_000,
    dependentsIndex: false,
    indexMaxDependents: 100_000,
    indexFreshnessMs: 200,
    logLevel: "info",
    allowInsecureHttp: false,
    exportRelistIntervalMs: 300_000,
  });
});

Deno.test("parseWebhookOptions() turns the hold table on with --holds, sized by --holds-max", () => {
  const o = parse(["--kubeconfig=/k", "--holds", "--holds-max=50"]);
  assert.equal(o.holds, true);
  assert.equal(o.holdsMax, 50);
  assert.throws(
    () => parse(["--kubeconfig=/k", "--holds-max=0"]),
    /Cannot parse --holds-max/,
  );
});

Deno.test("parseWebhookOptions() turns the dependents index on, bounded by --index-max-dependents", () => {
  const o = parse([
    "--kubeconfig=/k",
    "--dependents-index",
    "--index-max-dependents=100000",
    "--index-freshness-timeout=50ms",
  ]);
  assert.equal(o.dependentsIndex, true);
  assert.equal(o.indexMaxDependents, 100_000);
  assert.equal(o.indexFreshnessMs, 50);
  assert.equal(
    parse(["--kubeconfig=/k", "--dependents-index=false"]).dependentsIndex,
    false,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--index-max-dependents=0"]),
    /Cannot parse --index-max-dependents/,
  );
});

Deno.test("parseWebhookOptions() takes KUBECONFIG from the environment", () => {
  const result = parseWebhookOptions([], {
    env: (n) => (n === "KUBECONFIG" ? "/env/k" : undefined),
  });
  assert.equal(result.help === false && result.options.kubeconfig, "/env/k");
});

Deno.test("parseWebhookOptions() accepts --webhook-port as the reference's alias", () => {
  assert.deepEqual(
    parse(["--kubeconfig=/k", "--webhook-port=9999"]).webhookBind,
    { hostname: "0.0.0.0", port: 9999 },
  );
  assert.deepEqual(
    parse([
      "--kubeconfig=/k",
      "--webhook-port=1",
      "--webhook-bind-address=127.0.0.1:2",
    ]).webhookBind,
    { hostname: "127.0.0.1", port: 2 },
  );
});

Deno.test("parseWebhookOptions() disables probes and metrics with 0 and reads the rest", () => {
  const o = parse([
    "--kubeconfig=/k",
    "--health-probe-bind-address=0",
    "--metrics-bind-address=0",
    "--kcp-base-host=https://proxy.example",
    "--list-timeout=2s",
    "--list-page-size=50",
    "--max-list-page-bytes=1048576",
    "--max-list-bytes-in-flight=1048576",
    "--log-level=DEBUG",
    "--api-export-name=deps.example",
  ]);
  assert.equal(o.healthBind, undefined);
  assert.equal(o.metricsBind, undefined);
  assert.equal(o.kcpBaseHost, "https://proxy.example");
  assert.equal(o.listTimeoutMs, 2000);
  assert.equal(o.listPageSize, 50);
  assert.equal(o.maxListPageBytes, 1024 * 1024);
  assert.equal(o.maxListBytesInFlight, 1024 * 1024);
  assert.equal(o.logLevel, "debug");
  assert.equal(o.apiExportName, "deps.example");
});

Deno.test("parseWebhookOptions() names the flag that is wrong", () => {
  assert.throws(
    () => parseWebhookOptions([], noEnv),
    /--kubeconfig \(or KUBECONFIG\) is required/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--webhook-bind-address=0"]),
    /cannot be disabled/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--list-timeout=soon"]),
    /Cannot parse --list-timeout/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--list-page-size=0"]),
    /Cannot parse --list-page-size/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--max-list-page-bytes=4MiB"]),
    /Cannot parse --max-list-page-bytes: want a positive integer/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--max-list-bytes-in-flight=0"]),
    /Cannot parse --max-list-bytes-in-flight: want a positive integer/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--max-list-bytes-in-flight=8388607"]),
    /Cannot use --max-list-bytes-in-flight below --max-list-page-bytes \(8388608 bytes\): current value is '8388607'/,
  );
  assert.throws(
    () =>
      parse([
        "--kubeconfig=/k",
        "--max-list-page-bytes=1048576",
        "--max-list-bytes-in-flight=1048575",
      ]),
    /below --max-list-page-bytes \(1048576 bytes\)/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--max-concurrent-reviews=many"]),
    /Cannot parse --max-concurrent-reviews: want a positive integer/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--max-review-bytes-in-flight=1024"]),
    /Cannot use --max-review-bytes-in-flight below the largest review/,
  );
  assert.equal(
    parse(["--kubeconfig=/k", "--skip-protection-mode=authorized"])
      .skipProtectionMode,
    "authorized",
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--skip-protection-mode=never"]),
    /Cannot parse --skip-protection-mode: want annotation or authorized/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--log-level=loud"]),
    /Cannot parse --log-level/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--metrics-bind-address=8080"]),
    /Cannot parse --metrics-bind-address/,
  );
  assert.throws(() => parse(["--bogus"]), /Cannot parse flags/);
});

Deno.test("parseWebhookOptions() answers --help without needing a kubeconfig", () => {
  assert.deepEqual(parseWebhookOptions(["--help"], noEnv), { help: true });
});

Deno.test("parseWebhookOptions() takes 0s where the help offers it: --teardown-order-timeout and --bindings-cache-ttl", () => {
  const options = parse([
    "--kubeconfig=/k",
    "--teardown-order-timeout=0s",
    "--bindings-cache-ttl=0s",
  ]);
  assert.equal(options.teardownOrderMs, 0);
  assert.equal(options.bindingsCacheTtlMs, 0);
  assert.throws(
    () => parse(["--kubeconfig=/k", "--teardown-order-timeout=-1s"]),
    /teardown-order-timeout/,
  );
});

Deno.test("parseWebhookOptions() reads --lock-expiry-skew from 0s up to 10m", () => {
  assert.equal(
    parse(["--kubeconfig=/k", "--lock-expiry-skew=0s"]).lockExpirySkewMs,
    0,
  );
  assert.equal(
    parse(["--kubeconfig=/k", "--lock-expiry-skew=30s"]).lockExpirySkewMs,
    30_000,
  );
  assert.equal(
    parse(["--kubeconfig=/k", "--lock-expiry-skew=10m"]).lockExpirySkewMs,
    600_000,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--lock-expiry-skew=11m"]),
    /--lock-expiry-skew.*at most 10m/,
  );
  assert.throws(
    () => parse(["--kubeconfig=/k", "--lock-expiry-skew=soon"]),
    /--lock-expiry-skew/,
  );
});
