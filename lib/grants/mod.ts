/**
 * The webhook's read grants, printed for the live rules: the `grants`
 * subcommand of the controller binary (`controller grants --kubeconfig=...`),
 * which needs no checkout of this repository.
 *
 * @module
 */
export * from "./grants_command.ts";
