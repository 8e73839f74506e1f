// Every subcommand of `panoptes`, in the order `panoptes --help` lists them.
import type { Command } from '../command.ts';
import { migrate } from './serve.ts';
import { allInOne } from './all-in-one.ts';
import { apiserver } from './apiserver.ts';
import { synchro } from './synchro.ts';
import { demo } from './demo.ts';
import { kubeconfig } from './kubeconfig.ts';
import { sim } from './sim.ts';

export const commands: Command[] = [allInOne, apiserver, synchro, migrate, demo, sim, kubeconfig];
