/**
 * `deno task bench:scale`: figures at scale.
 *
 * 1. The webhook's rule index rebuild at 1 000, 5 000 and 10 000 rules on
 *    one protected type, and its in-process admission decision with 1, 10
 *    and 100 rules on the type (see `webhook_scale.ts`).
 * 2. The controller's cold start with 2 000 rules over 200 provider
 *    workspaces on a real kcp, beside a floor of the same writes made by a
 *    bare client (see `controller_scale.ts`).
 *
 * `deno task bench:scale webhook` or `... controller` runs one of them.
 * The controller figure takes flags:
 *
 * - `--providers=N` (200) and `--rules-per-provider=N` (10): the scale,
 *   e.g. `... controller --providers=5 --rules-per-provider=4` for a quick
 *   check of the fixture;
 * - `--rounds=N` (3): rounds, each a cold start and a floor;
 * - `--writes-in-flight=8,32` (8): `--max-writes-in-flight` settings
 *   compared (the floor runs at each);
 * - `--direct-floor`: also the floor's writes straight to the workspaces as
 *   kcp-admin, past the virtual workspace (what it costs kcp);
 * - `--profile-controller=DIR`: each cold start's controller writes a V8
 *   tick log into DIR (`node --prof-process DIR/<file>` reads it); the
 *   profiler's own cost makes that run's figures not comparable.
 *
 * `KEEP_KCP_ROOT=1` keeps kcp's root directory, with the logs of kcp, the
 * webhook and each controller run.
 *
 * @module
 */
import { startKcp } from "../testing/mod.ts";
import { controllerScaleBench, type ScaleOptions } from "./controller_scale.ts";
import {
  formatDecisionTable,
  formatRebuildTable,
  measureDecision,
  measureRebuild,
} from "./webhook_scale.ts";

const USAGE =
  "usage: scale_bench.ts [webhook|controller] [--providers=N] [--rules-per-provider=N] [--rounds=N] [--writes-in-flight=N,...] [--direct-floor] [--profile-controller=DIR]";

function fail(message: string): never {
  console.error(`scale_bench: ${message}\n${USAGE}`);
  Deno.exit(2);
}

function positive(name: string, text: string): number {
  if (!/^[1-9][0-9]*$/.test(text)) {
    fail(`${name} must be a positive integer: current value is '${text}'`);
  }
  return Number(text);
}

/** The figure to run (both when absent) and the controller's options. */
function parseArgs(
  args: readonly string[],
): { only?: "webhook" | "controller"; options: ScaleOptions } {
  const options: ScaleOptions = {};
  let only: "webhook" | "controller" | undefined;
  for (const arg of args) {
    if (arg === "webhook" || arg === "controller") {
      if (only !== undefined) fail(`more than one figure: '${arg}'`);
      only = arg;
      continue;
    }
    if (arg === "--direct-floor") {
      options.directFloor = true;
      continue;
    }
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    const [, name = "", value = ""] = match ?? [];
    if (name === "providers") {
      options.providers = positive("--providers", value);
    } else if (name === "rules-per-provider") {
      options.rulesPerProvider = positive("--rules-per-provider", value);
    } else if (name === "rounds") {
      options.rounds = positive("--rounds", value);
    } else if (name === "profile-controller" && value !== "") {
      options.profileDir = value;
    } else if (name === "writes-in-flight") {
      options.writesInFlight = value.split(",").map((v) =>
        positive("--writes-in-flight", v)
      );
    } else {
      fail(`unknown argument '${arg}'`);
    }
  }
  return { ...(only === undefined ? {} : { only }), options };
}

const { only, options } = parseArgs(Deno.args);

if (only !== "controller") {
  console.log(
    "Webhook rule index rebuild (RuleRegistry.replace), ms, min / median / max:\n",
  );
  console.log(formatRebuildTable(measureRebuild()));
  console.log(
    "\nWebhook admission decision in-process (DeletionValidator.validate, one page of 1 dependent per list), us, min / median / max:\n",
  );
  console.log(formatDecisionTable(await measureDecision()));
}
if (only !== "webhook") {
  const kcp = await startKcp();
  try {
    await controllerScaleBench(kcp, options);
  } finally {
    // KEEP_KCP_ROOT=1 keeps kcp's root directory: its log, and each
    // controller's and the webhook's.
    const keepRootDir = Deno.env.get("KEEP_KCP_ROOT") === "1";
    await kcp.stop({ keepRootDir });
    if (keepRootDir) console.log(`kcp root directory: ${kcp.rootDir}`);
  }
}
