/**
 * `deno task rbac`: the same as `controller grants` (see
 * `lib/grants/grants_command.ts`), for a checkout.
 *
 * ```sh
 * deno task rbac --kubeconfig=webhook.kubeconfig \
 *   | kubectl --server https://<shard>/clusters/system:admin apply -f -
 * ```
 *
 * @module
 */
import { GRANTS_ENTRYPOINT } from "../lib/grants/mod.ts";
import { runEntrypoint } from "../lib/runtime/mod.ts";

if (import.meta.main) {
  Deno.exit(await runEntrypoint(Deno.args, GRANTS_ENTRYPOINT));
}
