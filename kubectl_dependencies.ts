/**
 * `kubectl dependencies`: a kubectl plugin that says why a kcp object cannot
 * be deleted (`why`), locks and unlocks objects (`lock`, `unlock`) and draws
 * the DependencyRules' graph (`graph`), with the user's kubeconfig and
 * nothing else. Install it as `kubectl-dependencies` on the `PATH`, with
 * the API server to talk to (`--allow-net`), the kubeconfig and the files it
 * names to read (`--allow-read`), and the variables it and its YAML parser
 * read (`--allow-env=...`); `graph --output-file` also needs `--allow-write`:
 *
 * ```sh
 * deno install -g --name kubectl-dependencies --allow-net --allow-read \
 *   --allow-env=KUBECONFIG,HOME,NO_COLOR,LOG_TOKENS,LOG_STREAM kubectl_dependencies.ts
 * kubectl dependencies why vpc/core -n team-a
 * ```
 *
 * @module
 */
import { main, processIo } from "./lib/plugin/mod.ts";

if (import.meta.main) {
  Deno.exit(await main(Deno.args, processIo()));
}
