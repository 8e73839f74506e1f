#!/usr/bin/env node
// Entry point of the `panoptes` command. TypeScript sources run through tsx's loader.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
