// An apiserver on a SQLite store in a worker thread, for tests that must see whether one
// request can exhaust its memory: start it with a heap bound (`startApiserverWorker`); a
// worker that runs out of memory ends without taking the test process with it.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { setLogLevel } from '../../lib/log.ts';

interface Started {
  base: string;
}

export interface ApiserverWorker {
  base: string;
  /** Set when the worker ended on its own (an error, out of memory). */
  exited(): Error | undefined;
  /** The worker's heap in use now (bytes). */
  heapUsed(): Promise<number>;
  close(): Promise<void>;
}

/** Starts the worker with at most `heapMb` of old-generation heap; resolves with its URL. */
export function startApiserverWorker(heapMb: number): Promise<ApiserverWorker> {
  // The worker runs this TypeScript file through tsx's loader, registered in the worker first.
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); })`;
  const worker = new Worker(boot, { eval: true, workerData: { serve: true }, resourceLimits: { maxOldGenerationSizeMb: heapMb } });
  let ended: Error | undefined;
  worker.on('error', (err) => (ended = err));
  worker.on('exit', (code) => (ended ??= new Error(`the apiserver worker exited (${code})`)));
  const ask = (type: string) =>
    new Promise<unknown>((resolve, reject) => {
      const onMessage = (m: { type: string; value: unknown }) => {
        if (m.type !== type) return;
        worker.off('message', onMessage);
        resolve(m.value);
      };
      worker.on('message', onMessage);
      worker.once('exit', () => reject(ended));
      worker.postMessage(type);
    });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { type: string; value: Started }) => {
      if (m.type !== 'started') return reject(new Error('unexpected message from the apiserver worker'));
      resolve({
        base: m.value.base,
        exited: () => ended,
        heapUsed: async () => (await ask('heap')) as number,
        close: async () => {
          if (ended) return;
          await ask('close').catch(() => undefined);
          await worker.terminate();
        },
      });
    });
    worker.once('error', reject);
  });
}

async function serve(): Promise<void> {
  const { openTestStore } = await import('../../storage/testing.ts');
  const { createApiserver } = await import('../../apiserver/server.ts');
  if (!process.env.PANOPTES_LOG_LEVEL) setLogLevel('error');
  const { store, close } = await openTestStore('sqlite');
  const api = await createApiserver({ store });
  const base = await api.listen('127.0.0.1', 0);
  parentPort!.on('message', async (m: string) => {
    if (m === 'heap') parentPort!.postMessage({ type: 'heap', value: process.memoryUsage().heapUsed });
    if (m === 'close') {
      await api.close();
      await close();
      parentPort!.postMessage({ type: 'close', value: undefined });
    }
  });
  parentPort!.postMessage({ type: 'started', value: { base } });
}

if (!isMainThread && (workerData as { serve?: boolean } | undefined)?.serve) void serve();
