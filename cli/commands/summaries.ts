// The one-line summary of every subcommand, for `panoptes --help` (which loads no command's
// module: cli/commands/index.ts) and each command's own usage text.
export const summaries = {
  'all-in-one': 'synchro and apiserver in one process (SQLite by default): for a laptop, CI and the demo',
  apiserver: 'serve discovery, list, get and watch from storage (stateless; run any number of replicas)',
  synchro: 'list and watch every member cluster; write current state and the change log to storage',
  migrate: 'create or upgrade the storage schema, then exit (safe to run from several processes at once)',
  demo: 'start three simulated clusters with a demo workload and print kubectl commands to try',
  sim: 'run simulated member clusters (in-memory Kubernetes API servers) in the foreground',
  kubeconfig: 'write a kubeconfig with contexts for Panoptes (all clusters, and one per member cluster)',
} as const;
