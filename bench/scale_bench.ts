/**
 * `deno task bench:scale`: figures at scale.
 *
 * 1. The webhook's rule index rebuild at 1 000, 5 000 and 10 000 rules on
 *    one protected type, and its in-process admission decision with 1, 10
 *    and 100 rules on the type (see `webhook_scale.ts`).
 * 2. The controller's cold start with 2 000 rules over 200 provider
 *    workspaces on a real kcp (see `controller_scale.ts`).
 *
 * `deno task bench:scale webhook` or `... controller` runs one of them;
 * `... controller --writes-in-flight=8,32 [--rounds=N]` compares controller
 * settings.
 *
 * @module
 */
import { startKcp } from "../testing/mod.ts";
import { controllerScaleBench } from "./controller_scale.ts";
import {
  formatDecisionTable,
  formatRebuildTable,
  measureDecision,
  measureRebuild,
} from "./webhook_scale.ts";

const [only, ...flags] = Deno.args;
/** `--writes-in-flight=8,32`: the controller settings compared. */
const writesInFlight = flags.find((f) => f.startsWith("--writes-in-flight="))
  ?.slice("--writes-in-flight=".length).split(",").map(Number);
/** `--rounds=N`: cold starts per setting. */
const rounds = flags.find((f) => f.startsWith("--rounds="))?.slice(
  "--rounds=".length,
);
if (only !== undefined && only !== "controller" && only !== "webhook") {
  console.error(
    `scale_bench: unknown figure '${only}'\nusage: scale_bench.ts [webhook|controller]`,
  );
  Deno.exit(2);
}

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
    await controllerScaleBench(kcp, {
      ...(writesInFlight === undefined ? {} : { writesInFlight }),
      ...(rounds === undefined ? {} : { rounds: Number(rounds) }),
    });
  } finally {
    await kcp.stop();
  }
}
