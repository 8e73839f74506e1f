// The parent's side of hack/bench/synchro-sim.ts (or of another simulator script, such as
// hack/bench/mcs-sim.ts): simulated clusters in a child process of their own (so they do not
// share an event loop with what is measured), driven over IPC.
import { fork, type ChildProcess } from 'node:child_process';

/** A message from the simulator process: a reply (`ok`) or churn event times. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Reply = any;

export class SimProcess {
  private waiters: Array<{ ok: string; resolve: (m: Reply) => void }> = [];
  /** Churn events as they happen: [cluster, upstream resourceVersion, wall time in ms]. */
  onTimes?: (t: Array<[string, string, number]>) => void;
  /** The clusters' URLs once started (`bench-0`, `bench-1`, ...). */
  urls: string[] = [];

  private constructor(readonly child: ChildProcess) {
    child.on('message', (m: Reply) => {
      if (m.times) return this.onTimes?.(m.times);
      const i = this.waiters.findIndex((w) => w.ok === m.ok);
      if (i >= 0) this.waiters.splice(i, 1)[0].resolve(m);
    });
  }

  /** Starts the process (`script`, default synchro-sim.ts) and, with `clusters`, that many simulated clusters in it (with the demo workload if asked). */
  static async start(clusters?: number, opts: { workload?: boolean; script?: URL } = {}): Promise<SimProcess> {
    const { script = new URL('./synchro-sim.ts', import.meta.url), ...rest } = opts;
    const child = fork(script, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const sim = new SimProcess(child);
    await sim.wait('ready');
    if (clusters !== undefined) sim.urls = (await sim.call({ cmd: 'start', clusters, ...rest })).urls;
    return sim;
  }

  private wait(ok: string): Promise<Reply> {
    return new Promise((resolve) => this.waiters.push({ ok, resolve }));
  }

  async call(msg: Record<string, unknown> & { cmd: string }): Promise<Reply> {
    const p = this.wait(msg.cmd);
    this.child.send(msg);
    return p;
  }

  async exit(): Promise<void> {
    const p = this.wait('exit');
    this.child.send({ cmd: 'exit' });
    await Promise.race([p, new Promise((r) => setTimeout(r, 3000))]);
    this.child.kill();
  }
}
