import assert from "node:assert/strict";
import {
  CONTROLLER_FLAGS,
  type ControllerOptions,
  parseControllerOptions,
} from "./options.ts";
import { usage } from "../runtime/mod.ts";

const noEnv = { env: () => undefined };

/** The flags every start needs. */
const REQUIRED = [
  "--kubeconfig=/k",
  "--webhook-url=https://webhook.example:9443/validate",
  "--webhook-ca-bundle-path=/etc/webhook-ca/ca.crt",
];

function parse(args: string[]): ControllerOptions {
  const result = parseControllerOptions([...REQUIRED, ...args], noEnv);
  assert.equal(result.help, false);
  return (result as { options: ControllerOptions }).options;
}

Deno.test("parseControllerOptions() applies the reference's defaults", () => {
  assert.deepEqual(parse([]), {
    kubeconfig: "/k",
    apiExportName: "dependencies.opendefense.cloud",
    webhookUrl: "https://webhook.example:9443/validate",
    webhookCaBundlePath: "/etc/webhook-ca/ca.crt",
    webhookTimeoutSeconds: 10,
    webhookUser: "dependency-webhook",
    dependentsIndex: false,
    resyncPeriodMs: 300_000,
    maxWritesInFlight: 8,
    healthBind: { hostname: "0.0.0.0", port: 8081 },
    metricsBind: { hostname: "0.0.0.0", port: 8080 },
    graph: false,
    leaderElect: false,
    leaderElectionNamespace: "default",
    leaderElectionId: "dependency-controller",
    logLevel: "info",
    allowInsecureHttp: false,
    exportRelistIntervalMs: 300_000,
  });
});

Deno.test("parseControllerOptions() reads every flag", () => {
  assert.deepEqual(
    parseControllerOptions([
      "--kubeconfig",
      "/other",
      "--api-export-name=deps.example",
      "--kcp-base-host=https://proxy.example:6443/clusters/root:dep-ctrl",
      "--export-relist-interval=30s",
      "--webhook-url=https://10.0.0.1/hooks/deps",
      "--webhook-ca-bundle-path=/ca.pem",
      "--webhook-timeout=30s",
      "--webhook-user=system:serviceaccount:deps:webhook",
      "--dependents-index",
      "--resync-period=90s",
      "--max-writes-in-flight=3",
      "--health-probe-bind-address=127.0.0.1:9001",
      "--metrics-bind-address=[::1]:9002",
      "--graph",
      "--graph-holds-url=http://dependency-webhook.deps.svc:8080/holds.json",
      "--leader-elect",
      "--leader-election-namespace=kube-system",
      "--leader-election-id=dep-ctrl.example.com",
      "--log-level=WARNING",
      "--allow-insecure-http",
    ], noEnv),
    {
      help: false,
      options: {
        kubeconfig: "/other",
        apiExportName: "deps.example",
        kcpBaseHost: "https://proxy.example:6443",
        webhookUrl: "https://10.0.0.1/hooks/deps",
        webhookCaBundlePath: "/ca.pem",
        webhookTimeoutSeconds: 30,
        webhookUser: "system:serviceaccount:deps:webhook",
        dependentsIndex: true,
        resyncPeriodMs: 90_000,
        maxWritesInFlight: 3,
        healthBind: { hostname: "127.0.0.1", port: 9001 },
        metricsBind: { hostname: "::1", port: 9002 },
        graph: true,
        graphHoldsUrl: "http://dependency-webhook.deps.svc:8080/holds.json",
        leaderElect: true,
        leaderElectionNamespace: "kube-system",
        leaderElectionId: "dep-ctrl.example.com",
        logLevel: "warn",
        allowInsecureHttp: true,
        exportRelistIntervalMs: 30_000,
      },
    },
  );
});

Deno.test("parseControllerOptions() takes KUBECONFIG from the environment, the flag first", () => {
  const env = {
    env: (name: string) => (name === "KUBECONFIG" ? "/env/k" : undefined),
  };
  const fromEnv = parseControllerOptions(REQUIRED.slice(1), env);
  assert.equal(fromEnv.help === false && fromEnv.options.kubeconfig, "/env/k");
  const fromFlag = parseControllerOptions(REQUIRED, env);
  assert.equal(fromFlag.help === false && fromFlag.options.kubeconfig, "/k");
});

Deno.test("parseControllerOptions() disables probes and metrics with 0", () => {
  const o = parse([
    "--health-probe-bind-address=0",
    "--metrics-bind-address=0",
  ]);
  assert.equal(o.healthBind, undefined);
  assert.equal(o.metricsBind, undefined);
  assert.equal("healthBind" in o, false);
  assert.equal("metricsBind" in o, false);
});

Deno.test("parseControllerOptions() keeps the webhook URL exactly as given", () => {
  for (
    const url of [
      "https://webhook.example",
      "https://webhook.example/",
      "https://webhook.example:9443/validate",
      "https://[fd00::1]:9443/a/b/",
      "https://10.96.0.10/validate",
    ]
  ) {
    assert.equal(parse([`--webhook-url=${url}`]).webhookUrl, url);
  }
});

Deno.test("parseControllerOptions() accepts --leader-elect=true and --leader-elect=false", () => {
  assert.equal(parse(["--leader-elect=true"]).leaderElect, true);
  assert.equal(parse(["--leader-elect=false"]).leaderElect, false);
  assert.equal(
    parse(["--leader-elect", "--leader-elect=false"]).leaderElect,
    false,
  );
  assert.equal(
    parse(["--leader-elect=false", "--leader-elect"]).leaderElect,
    true,
  );
});

Deno.test("parseControllerOptions() takes whole seconds from 1s to 30s for --webhook-timeout", () => {
  assert.equal(parse(["--webhook-timeout=1s"]).webhookTimeoutSeconds, 1);
  assert.equal(parse(["--webhook-timeout=0.5m"]).webhookTimeoutSeconds, 30);
  assert.equal(parse(["--webhook-timeout=3000ms"]).webhookTimeoutSeconds, 3);
  for (const value of ["0s", "500ms", "1500ms", "31s", "1m", "soon"]) {
    assert.throws(
      () => parse([`--webhook-timeout=${value}`]),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message.startsWith("Cannot parse --webhook-timeout: ") &&
        error.message.includes(`current value is '${value}'`),
    );
  }
});

Deno.test("parseControllerOptions() names the required flag that is missing", () => {
  assert.throws(
    () => parseControllerOptions(REQUIRED.slice(1), noEnv),
    { message: "Cannot start: --kubeconfig (or KUBECONFIG) is required" },
  );
  assert.throws(
    () => parseControllerOptions([REQUIRED[0]!, REQUIRED[2]!], noEnv),
    { message: "Cannot start: --webhook-url is required" },
  );
  assert.throws(
    () => parseControllerOptions(REQUIRED.slice(0, 2), noEnv),
    { message: "Cannot start: --webhook-ca-bundle-path is required" },
  );
  assert.throws(
    () => parse(["--webhook-url="]),
    { message: "Cannot start: --webhook-url is required" },
  );
});

Deno.test("parseControllerOptions() rejects webhook URLs kcp would refuse", () => {
  const cases: [string, RegExp][] = [
    ["http://webhook.example/validate", /https only/],
    ["webhook.example/validate", /want an absolute https:\/\/ URL/],
    ["/validate", /want an absolute https:\/\/ URL/],
    ["https://user:pw@webhook.example/validate", /user information/],
    ["https://user@webhook.example/validate", /user information/],
    ["https://@webhook.example/validate", /user information/],
    ["https://webhook.example/validate#x", /fragments/],
    ["https://webhook.example/validate#", /fragments/],
    ["https://webhook.example/validate?a=b", /query parameters/],
    ["https://webhook.example/validate?", /query parameters/],
  ];
  for (const [url, problem] of cases) {
    assert.throws(
      () => parse([`--webhook-url=${url}`]),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message.startsWith("Cannot parse --webhook-url: ") &&
        problem.test(error.message) &&
        error.message.endsWith(`current value is '${url}'`),
      url,
    );
  }
});

Deno.test("parseControllerOptions() names the flag that is wrong", () => {
  const cases: [string, RegExp][] = [
    ["--resync-period=often", /^Cannot parse --resync-period: /],
    ["--resync-period=0s", /^Cannot parse --resync-period: /],
    ["--kcp-base-host=proxy.example", /^Cannot parse --kcp-base-host: /],
    ["--kcp-base-host=ftp://proxy.example", /^Cannot parse --kcp-base-host: /],
    [
      "--health-probe-bind-address=8081",
      /^Cannot parse --health-probe-bind-address: /,
    ],
    ["--metrics-bind-address=8080", /^Cannot parse --metrics-bind-address: /],
    [
      "--leader-elect=yes",
      /^Cannot parse --leader-elect: want true or false: current value is 'yes'$/,
    ],
    [
      "--leader-election-namespace=Kube_System",
      /^Cannot parse --leader-election-namespace: want a DNS label/,
    ],
    [
      "--leader-election-namespace=a.b",
      /^Cannot parse --leader-election-namespace: /,
    ],
    [
      "--leader-election-id=Dep Ctrl",
      /^Cannot parse --leader-election-id: want a DNS subdomain/,
    ],
    ["--log-level=loud", /^Cannot parse --log-level: /],
    ["--graph=yes", /^Cannot parse --graph: want true or false/],
    ["--bogus", /^Cannot parse flags: /],
    ["positional", /^Cannot parse flags: /],
  ];
  for (const [arg, message] of cases) {
    assert.throws(
      () => parse([arg]),
      (error: unknown) =>
        error instanceof TypeError && message.test(error.message),
      arg,
    );
  }
});

Deno.test("parseControllerOptions() answers --help without needing the required flags", () => {
  assert.deepEqual(parseControllerOptions(["--help"], noEnv), { help: true });
  assert.deepEqual(parseControllerOptions(["-h"], noEnv), { help: true });
});

Deno.test("parseControllerOptions() reads --dependents-index as the webhook's boolean flag, off by default", () => {
  assert.equal(parse([]).dependentsIndex, false);
  assert.equal(parse(["--dependents-index"]).dependentsIndex, true);
  assert.equal(parse(["--dependents-index=true"]).dependentsIndex, true);
  assert.equal(parse(["--dependents-index=false"]).dependentsIndex, false);
  const text = usage("controller", "Reconciles.", CONTROLLER_FLAGS);
  assert.match(text, /--dependents-index\n.*Indexed condition/);
});

Deno.test("CONTROLLER_FLAGS lists the flags in --help order", () => {
  assert.deepEqual(CONTROLLER_FLAGS.map((f) => f.name), [
    "kubeconfig",
    "api-export-name",
    "kcp-base-host",
    "export-relist-interval",
    "webhook-url",
    "webhook-ca-bundle-path",
    "webhook-timeout",
    "webhook-user",
    "dependents-index",
    "resync-period",
    "max-writes-in-flight",
    "health-probe-bind-address",
    "metrics-bind-address",
    "graph",
    "graph-holds-url",
    "leader-elect",
    "leader-election-namespace",
    "leader-election-id",
    "log-level",
    "allow-insecure-http",
  ]);
  const text = usage("controller", "Reconciles.", CONTROLLER_FLAGS);
  assert.match(text, /--leader-elect\n/);
  assert.match(text, /--webhook-timeout=<value>\n.*\(default "10s"\)/);
  assert.match(text, /--kubeconfig=<value>\n.*\(env KUBECONFIG\)/);
});

Deno.test("parseControllerOptions() refuses a webhook user with spaces or control characters", () => {
  for (const user of ["", "a b", "a\nb"]) {
    assert.throws(
      () => parse([`--webhook-user=${user}`]),
      /--webhook-user: must be a user name without spaces or control characters/,
    );
  }
});

Deno.test("parseControllerOptions() takes --graph and an http(s) --graph-holds-url with it", () => {
  assert.equal(parse(["--graph"]).graph, true);
  assert.equal(parse(["--graph=false"]).graph, false);
  assert.equal("graphHoldsUrl" in parse(["--graph"]), false);
  for (
    const url of [
      "http://dependency-webhook.deps.svc:8080/holds.json",
      "https://10.0.0.7:8443/holds.json",
      "http://[fd00::1]:8080/holds.json?limit=100",
    ]
  ) {
    assert.equal(
      parse(["--graph", `--graph-holds-url=${url}`]).graphHoldsUrl,
      url,
    );
  }
});

Deno.test("parseControllerOptions() refuses a --graph-holds-url it could not read, or without --graph", () => {
  const cases: [string[], RegExp][] = [
    [["--graph-holds-url=http://webhook:8080/holds.json"], /add --graph/],
    [
      ["--graph=false", "--graph-holds-url=http://webhook:8080/holds.json"],
      /add --graph/,
    ],
    [["--graph", "--graph-holds-url="], /want an absolute http/],
    [
      ["--graph", "--graph-holds-url=webhook:8080/holds.json"],
      /want an absolute http/,
    ],
    [["--graph", "--graph-holds-url=/holds.json"], /want an absolute http/],
    [
      ["--graph", "--graph-holds-url=ftp://webhook/holds.json"],
      /want an absolute http/,
    ],
    [
      ["--graph", "--graph-holds-url=file:///holds.json"],
      /want an absolute http/,
    ],
    [
      ["--graph", "--graph-holds-url=http://user:pw@webhook:8080/holds.json"],
      /user information/,
    ],
    [
      ["--graph", "--graph-holds-url=http://@webhook:8080/holds.json"],
      /user information/,
    ],
    [
      ["--graph", "--graph-holds-url=http://webhook:8080/holds.json#top"],
      /fragments/,
    ],
  ];
  for (const [args, problem] of cases) {
    assert.throws(
      () => parse(args),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message.startsWith("Cannot parse --graph-holds-url: ") &&
        problem.test(error.message),
      args.join(" "),
    );
  }
});

Deno.test("parseControllerOptions() refuses --graph without a metrics listener to serve it", () => {
  assert.throws(
    () => parse(["--graph", "--metrics-bind-address=0"]),
    {
      message:
        "Cannot parse --graph: the page is served on the metrics listener, which --metrics-bind-address=0 turns off",
    },
  );
  assert.equal(parse(["--metrics-bind-address=0"]).graph, false);
});

Deno.test("--graph-holds-url's help names only what the manifests and the chart create", () => {
  const help = CONTROLLER_FLAGS.find((f) => f.name === "graph-holds-url")!
    .help;
  // No Service dependency-webhook-metrics exists; the webhook's Service
  // dependency-webhook has a metrics port only with the chart's ServiceMonitor.
  assert.doesNotMatch(help, /dependency-webhook-metrics/);
  assert.match(help, /--holds/);
});
