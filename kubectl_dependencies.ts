/**
 * `kubectl dependencies`: a kubectl plugin that says why a kcp object cannot
 * be deleted (`why`), locks and unlocks objects (`lock`, `unlock`) and draws
 * the DependencyRules' graph (`graph`), with the user's kubeconfig and
 * nothing else. `deno task plugin:install` (`scripts/install_plugin.ts`)
 * installs it as `kubectl-dependencies` on the `PATH`, bundled into one
 * file and run by the Deno that installed it, with the API server to talk
 * to (`--allow-net`), the kubeconfig and the files it names to read
 * (`--allow-read`), and the variables it and its YAML parser read
 * (`--allow-env=...`); `graph --output-file` also needs `--allow-write`:
 *
 * ```sh
 * deno task plugin:install
 * kubectl dependencies why vpc/core -n team-a
 * ```
 *
 * @module
 */
import { main, processIo } from "./lib/plugin/mod.ts";

if (import.meta.main) {
  Deno.exit(await main(Deno.args, processIo()));
}
