// Every subcommand of `panoptes`, in the order `panoptes --help` lists them.
import type { Command } from '../command.ts';
import { migrate } from './serve.ts';
import { synchro } from './synchro.ts';
import { kubeconfig } from './kubeconfig.ts';
import { sim } from './sim.ts';

export const commands: Command[] = [synchro, migrate, sim, kubeconfig];
