// Every subcommand of `panoptes`, in the order `panoptes --help` lists them. A command's
// module is imported only when that command runs: each process loads the code it uses (the
// apiserver neither the simulated clusters nor synchro's member-cluster client), which is
// most of what a process holds in memory before it does any work.
import type { Command } from '../command.ts';
import { summaries } from './summaries.ts';

export interface CommandEntry {
  name: keyof typeof summaries;
  summary: string;
  load(): Promise<Command>;
}

const entry = (name: keyof typeof summaries, load: () => Promise<Command>): CommandEntry => ({ name, summary: summaries[name], load });

export const commands: CommandEntry[] = [
  entry('all-in-one', async () => (await import('./all-in-one.ts')).allInOne),
  entry('apiserver', async () => (await import('./apiserver.ts')).apiserver),
  entry('synchro', async () => (await import('./synchro.ts')).synchro),
  entry('migrate', async () => (await import('./serve.ts')).migrate),
  entry('demo', async () => (await import('./demo.ts')).demo),
  entry('sim', async () => (await import('./sim.ts')).sim),
  entry('kubeconfig', async () => (await import('./kubeconfig.ts')).kubeconfig),
];
