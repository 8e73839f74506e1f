// The `panoptes` command: dispatches to one subcommand.
import { ExitError, UsageError } from './command.ts';
import { commands, type CommandEntry } from './commands/index.ts';

function overview(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    'panoptes: read many Kubernetes clusters as one.',
    '',
    'Usage: panoptes <command> [flags]',
    '',
    'Commands:',
    ...lines,
    '',
    'Run `panoptes <command> --help` for the flags of one command.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(overview());
    return name === undefined ? 2 : 0;
  }
  const found: CommandEntry | undefined = commands.find((c) => c.name === name);
  if (!found) {
    console.error(`panoptes: unknown command ${JSON.stringify(name)}\n\n${overview()}`);
    return 2;
  }
  const command = await found.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(command.usage);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    if (err instanceof ExitError) return err.code;
    if (err instanceof UsageError) {
      console.error(`panoptes ${command.name}: ${err.message}\n\n${command.usage}`);
      return 2;
    }
    console.error(`panoptes ${command.name}: ${(err as Error).stack ?? String(err)}`);
    return 1;
  }
}
