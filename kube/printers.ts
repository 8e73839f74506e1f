// kube-apiserver's Table cells for the common built-in kinds (pkg/printers/internalversion,
// printed with Wide: true as the server does; kubectl hides priority-1 columns unless -o wide).
// Each printer yields the cells in the order of the kind's columnDefinitions in
// reference/table-columns.json (captured from kube-apiserver v1.28).
type Obj = Record<string, unknown>;

const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(rec) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : 0);

/** k8s.io/apimachinery/pkg/util/duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(ms / 3_600_000);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** translateTimestampSince: `<unknown>` for an unset time. */
export function since(ts: unknown, now: number): string {
  const t = typeof ts === 'string' && ts ? Date.parse(ts) : NaN;
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now - t);
}

/** labels.FormatLabels: sorted k=v joined by commas, `<none>` when empty. */
export function formatLabels(m: unknown): string {
  const entries = Object.entries(rec(m)).filter(([, v]) => typeof v === 'string') as Array<[string, string]>;
  if (entries.length === 0) return '<none>';
  return entries
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** metav1.LabelSelectorAsSelector(...).String(): requirements sorted by key. */
export function formatLabelSelector(sel: unknown): string {
  const s = rec(sel);
  const reqs: Array<{ key: string; text: string }> = [];
  for (const [k, v] of Object.entries(rec(s.matchLabels))) reqs.push({ key: k, text: `${k}=${str(v)}` });
  for (const e of arr(s.matchExpressions)) {
    const key = str(e.key);
    const values = (Array.isArray(e.values) ? e.values.map(str) : []).sort();
    switch (e.operator) {
      case 'In':
        reqs.push({ key, text: `${key} in (${values.join(',')})` });
        break;
      case 'NotIn':
        reqs.push({ key, text: `${key} notin (${values.join(',')})` });
        break;
      case 'Exists':
        reqs.push({ key, text: key });
        break;
      case 'DoesNotExist':
        reqs.push({ key, text: `!${key}` });
        break;
    }
  }
  if (Object.keys(s).length === 0 && reqs.length === 0) return '<none>';
  return reqs
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((r) => r.text)
    .join(',');
}

function containerCells(podSpec: unknown): [string, string] {
  const cs = arr(rec(podSpec).containers);
  return [cs.map((c) => str(c.name)).join(','), cs.map((c) => str(c.image)).join(',')];
}

const templateSpec = (o: Obj) => rec(rec(rec(o.spec).template).spec);

function podCells(o: Obj, now: number): unknown[] {
  const spec = rec(o.spec);
  const status = rec(o.status);
  const meta = rec(o.metadata);
  let restarts = 0;
  let sidecarRestarts = 0;
  let readyContainers = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  const totalContainers = arr(spec.containers).length;
  let reason = str(status.reason) || str(status.phase);
  for (const c of arr(status.conditions)) if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  const initSpecs = new Map(arr(spec.initContainers).map((c) => [str(c.name), c]));
  const initCount = initSpecs.size;
  const finished = (c: Obj) => {
    const t = rec(rec(c.lastState).terminated);
    return t.finishedAt ? Date.parse(str(t.finishedAt)) || 0 : 0;
  };
  let initializing = false;
  const inits = arr(status.initContainerStatuses);
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i];
    restarts += num(c.restartCount);
    lastRestart = Math.max(lastRestart, finished(c));
    const sidecar = rec(initSpecs.get(str(c.name))).restartPolicy === 'Always';
    if (sidecar) {
      sidecarRestarts += num(c.restartCount);
      lastSidecarRestart = Math.max(lastSidecarRestart, finished(c));
    }
    const state = rec(c.state);
    const term = state.terminated ? rec(state.terminated) : undefined;
    const waiting = state.waiting ? rec(state.waiting) : undefined;
    if (term && num(term.exitCode) === 0) continue;
    if (sidecar && c.started === true) continue;
    if (term) {
      reason = str(term.reason) ? `Init:${str(term.reason)}` : num(term.signal) !== 0 ? `Init:Signal:${num(term.signal)}` : `Init:ExitCode:${num(term.exitCode)}`;
    } else if (waiting && str(waiting.reason) && waiting.reason !== 'PodInitializing') {
      reason = `Init:${str(waiting.reason)}`;
    } else {
      reason = `Init:${i}/${initCount}`;
    }
    initializing = true;
    break;
  }
  const initializedTrue = arr(status.conditions).some((c) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initializedTrue) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const cs = arr(status.containerStatuses);
    for (let i = cs.length - 1; i >= 0; i--) {
      const c = cs[i];
      restarts += num(c.restartCount);
      lastRestart = Math.max(lastRestart, finished(c));
      const state = rec(c.state);
      const waiting = state.waiting ? rec(state.waiting) : undefined;
      const term = state.terminated ? rec(state.terminated) : undefined;
      if (waiting && str(waiting.reason)) reason = str(waiting.reason);
      else if (term && str(term.reason)) reason = str(term.reason);
      else if (term) reason = num(term.signal) !== 0 ? `Signal:${num(term.signal)}` : `ExitCode:${num(term.exitCode)}`;
      else if (c.ready === true && state.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      reason = arr(status.conditions).some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady';
    }
  }
  if (meta.deletionTimestamp && status.reason === 'NodeLost') reason = 'Unknown';
  else if (meta.deletionTimestamp) reason = 'Terminating';
  const restartsText = restarts !== 0 && lastRestart > 0 ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
  const ips = arr(status.podIPs);
  const podIP = str(ips[0]?.ip) || str(status.podIP) || '<none>';
  let gates = '<none>';
  const rg = arr(spec.readinessGates);
  if (rg.length) {
    let ok = 0;
    for (const g of rg) {
      const c = arr(status.conditions).find((x) => x.type === g.conditionType);
      if (c && c.status === 'True') ok++;
    }
    gates = `${ok}/${rg.length}`;
  }
  return [
    str(meta.name),
    `${readyContainers}/${totalContainers}`,
    reason,
    restartsText,
    since(meta.creationTimestamp, now),
    podIP,
    str(spec.nodeName) || '<none>',
    str(status.nominatedNodeName) || '<none>',
    gates,
  ];
}

/** Row conditions kube-apiserver sets on pods that have finished. */
export function podRowConditions(o: Obj): Obj[] | undefined {
  const phase = rec(o.status).phase;
  if (phase === 'Succeeded') return [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }];
  if (phase === 'Failed') return [{ type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' }];
  return undefined;
}

function serviceExternalIP(o: Obj): string {
  const spec = rec(o.spec);
  const external = Array.isArray(spec.externalIPs) ? spec.externalIPs.map(str) : [];
  switch (spec.type) {
    case undefined:
    case 'ClusterIP':
    case 'NodePort':
      return external.length ? external.join(',') : '<none>';
    case 'LoadBalancer': {
      const lb = arr(rec(rec(o.status).loadBalancer).ingress)
        .map((i) => str(i.ip) || str(i.hostname))
        .filter(Boolean);
      if (external.length) return [...lb, ...external].join(',');
      return lb.length ? lb.join(',') : '<pending>';
    }
    case 'ExternalName':
      return str(spec.externalName);
  }
  return '<unknown>';
}

function servicePorts(o: Obj): string {
  const ports = arr(rec(o.spec).ports).map((p) => {
    const proto = str(p.protocol) || 'TCP';
    return num(p.nodePort) ? `${num(p.port)}:${num(p.nodePort)}/${proto}` : `${num(p.port)}/${proto}`;
  });
  return ports.length ? ports.join(',') : '<none>';
}

function nodeCells(o: Obj, now: number): unknown[] {
  const meta = rec(o.metadata);
  const status = rec(o.status);
  const ready = arr(status.conditions).find((c) => c.type === 'Ready');
  const st: string[] = [];
  if (ready) st.push(ready.status === 'True' ? 'Ready' : 'NotReady');
  if (st.length === 0) st.push('Unknown');
  if (rec(o.spec).unschedulable === true) st.push('SchedulingDisabled');
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(rec(meta.labels))) {
    if (k.startsWith('node-role.kubernetes.io/')) {
      const role = k.slice('node-role.kubernetes.io/'.length);
      if (role) roles.add(role);
    } else if (k === 'kubernetes.io/role' && str(v)) roles.add(str(v));
  }
  const info = rec(status.nodeInfo);
  const addr = (type: string) => str(arr(status.addresses).find((a) => a.type === type)?.address) || '<none>';
  return [
    str(meta.name),
    st.join(','),
    roles.size ? [...roles].sort().join(',') : '<none>',
    since(meta.creationTimestamp, now),
    str(info.kubeletVersion),
    addr('InternalIP'),
    addr('ExternalIP'),
    str(info.osImage) || '<unknown>',
    str(info.kernelVersion) || '<unknown>',
    str(info.containerRuntimeVersion) || '<unknown>',
  ];
}

function jobCells(o: Obj, now: number): unknown[] {
  const meta = rec(o.metadata);
  const spec = rec(o.spec);
  const status = rec(o.status);
  const succeeded = num(status.succeeded);
  let completions: string;
  if (typeof spec.completions === 'number') completions = `${succeeded}/${spec.completions}`;
  else {
    const parallelism = num(spec.parallelism);
    completions = parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
  }
  let duration = '';
  const start = Date.parse(str(status.startTime));
  const end = Date.parse(str(status.completionTime));
  if (!Number.isNaN(start)) duration = humanDuration((Number.isNaN(end) ? now : end) - start);
  const [containers, images] = containerCells(templateSpec(o));
  return [str(meta.name), completions, duration, since(meta.creationTimestamp, now), containers, images, formatLabelSelector(spec.selector)];
}

/** core/v1 Event and events.k8s.io/v1 Event (converted to the core form first, as kube does). */
function eventCells(o: Obj, now: number, eventsV1: boolean): unknown[] {
  const meta = rec(o.metadata);
  const e = eventsV1
    ? {
        involvedObject: rec(o.regarding),
        firstTimestamp: o.deprecatedFirstTimestamp,
        lastTimestamp: o.deprecatedLastTimestamp,
        count: o.deprecatedCount,
        source: rec(o.deprecatedSource),
        message: o.note,
      }
    : { involvedObject: rec(o.involvedObject), firstTimestamp: o.firstTimestamp, lastTimestamp: o.lastTimestamp, count: o.count, source: rec(o.source), message: o.message };
  const micro = (v: unknown) => since(v, now);
  let first = since(e.firstTimestamp, now);
  if (!e.firstTimestamp) first = micro(o.eventTime);
  let last = since(e.lastTimestamp, now);
  if (!e.lastTimestamp) last = first;
  let count = num(e.count);
  const series = o.series ? rec(o.series) : undefined;
  if (series) {
    last = micro(series.lastObservedTime);
    count = num(series.count);
  } else if (count === 0) count = 1;
  const io = e.involvedObject;
  const target = str(io.name) ? `${str(io.kind).toLowerCase()}/${str(io.name)}` : str(io.kind).toLowerCase();
  const component = str(e.source.component) || str(o.reportingController);
  const instance = str(e.source.host) || str(o.reportingInstance);
  const source = instance ? `${component}, ${instance}` : component;
  return [last, str(o.type), str(o.reason), target, str(io.fieldPath), source, str(e.message).trim(), first, count, str(meta.name)];
}

/** listWithMoreString: the first 3, then ` + N more...`; `<unset>` when empty. */
function listWithMore(items: string[], max = 3): string {
  const shown = items.slice(0, max).join(',');
  if (items.length > max) return `${shown} + ${items.length - max} more...`;
  return shown || '<unset>';
}

/** printEndpointSlice: formatDiscoveryPorts (the port, or its name, or `*`) and formatDiscoveryEndpoints (every address). */
function endpointSliceCells(o: Obj, now: number): unknown[] {
  const ports = arr(o.ports).map((p) => (typeof p.port === 'number' ? String(p.port) : str(p.name) || '*'));
  const addresses = arr(o.endpoints).flatMap((e) => (Array.isArray(e.addresses) ? e.addresses.map(str) : []));
  return [str(rec(o.metadata).name), str(o.addressType), listWithMore(ports), listWithMore(addresses), since(rec(o.metadata).creationTimestamp, now)];
}

export type Printer = (o: Obj, now: number) => unknown[];

/** Printers by `group/resource`. */
export const printers: Record<string, Printer> = {
  '/pods': podCells,
  '/nodes': nodeCells,
  '/namespaces': (o, now) => [str(rec(o.metadata).name), str(rec(o.status).phase), since(rec(o.metadata).creationTimestamp, now)],
  '/configmaps': (o, now) => [str(rec(o.metadata).name), Object.keys(rec(o.data)).length + Object.keys(rec(o.binaryData)).length, since(rec(o.metadata).creationTimestamp, now)],
  '/secrets': (o, now) => [str(rec(o.metadata).name), str(o.type), Object.keys(rec(o.data)).length, since(rec(o.metadata).creationTimestamp, now)],
  '/serviceaccounts': (o, now) => [str(rec(o.metadata).name), arr(o.secrets).length, since(rec(o.metadata).creationTimestamp, now)],
  '/services': (o, now) => {
    const spec = rec(o.spec);
    const ips = Array.isArray(spec.clusterIPs) ? spec.clusterIPs.map(str) : [];
    return [str(rec(o.metadata).name), str(spec.type), ips[0] || str(spec.clusterIP) || '<none>', serviceExternalIP(o), servicePorts(o), since(rec(o.metadata).creationTimestamp, now), formatLabels(spec.selector)];
  },
  '/events': (o, now) => eventCells(o, now, false),
  'events.k8s.io/events': (o, now) => eventCells(o, now, true),
  'apps/deployments': (o, now) => {
    const spec = rec(o.spec);
    const status = rec(o.status);
    const [c, i] = containerCells(templateSpec(o));
    const desired = typeof spec.replicas === 'number' ? spec.replicas : 1;
    return [str(rec(o.metadata).name), `${num(status.readyReplicas)}/${desired}`, num(status.updatedReplicas), num(status.availableReplicas), since(rec(o.metadata).creationTimestamp, now), c, i, formatLabelSelector(spec.selector)];
  },
  'apps/replicasets': (o, now) => {
    const spec = rec(o.spec);
    const status = rec(o.status);
    const [c, i] = containerCells(templateSpec(o));
    const desired = typeof spec.replicas === 'number' ? spec.replicas : 1;
    return [str(rec(o.metadata).name), desired, num(status.replicas), num(status.readyReplicas), since(rec(o.metadata).creationTimestamp, now), c, i, formatLabelSelector(spec.selector)];
  },
  'apps/statefulsets': (o, now) => {
    const spec = rec(o.spec);
    const [c, i] = containerCells(templateSpec(o));
    const desired = typeof spec.replicas === 'number' ? spec.replicas : 1;
    return [str(rec(o.metadata).name), `${num(rec(o.status).readyReplicas)}/${desired}`, since(rec(o.metadata).creationTimestamp, now), c, i];
  },
  'apps/daemonsets': (o, now) => {
    const s = rec(o.status);
    const [c, i] = containerCells(templateSpec(o));
    return [
      str(rec(o.metadata).name),
      num(s.desiredNumberScheduled),
      num(s.currentNumberScheduled),
      num(s.numberReady),
      num(s.updatedNumberScheduled),
      num(s.numberAvailable),
      formatLabels(templateSpec(o).nodeSelector),
      since(rec(o.metadata).creationTimestamp, now),
      c,
      i,
      formatLabelSelector(rec(o.spec).selector),
    ];
  },
  'discovery.k8s.io/endpointslices': endpointSliceCells,
  // kube-aggregator's: the Service of an aggregated API, or Local; Available, with its reason unless True.
  'apiregistration.k8s.io/apiservices': (o, now) => {
    const service = rec(rec(o.spec).service);
    const available = arr(rec(o.status).conditions).find((c) => c.type === 'Available');
    const status = !available ? 'Unknown' : available.status === 'True' || !str(available.reason) ? str(available.status) : `${str(available.status)} (${str(available.reason)})`;
    return [str(rec(o.metadata).name), rec(o.spec).service ? `${str(service.namespace)}/${str(service.name)}` : 'Local', status, since(rec(o.metadata).creationTimestamp, now)];
  },
  'batch/jobs': jobCells,
  'batch/cronjobs': (o, now) => {
    const spec = rec(o.spec);
    const status = rec(o.status);
    const jobSpec = rec(rec(rec(spec.jobTemplate).spec).template).spec;
    const [c, i] = containerCells(jobSpec);
    const last = status.lastScheduleTime ? since(status.lastScheduleTime, now) : '<none>';
    return [str(rec(o.metadata).name), str(spec.schedule), spec.suspend === true, arr(status.active).length, last, since(rec(o.metadata).creationTimestamp, now), c, i, formatLabelSelector(rec(rec(spec.jobTemplate).spec).selector)];
  },
};
