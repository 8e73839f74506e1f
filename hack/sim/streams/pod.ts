// The pod and container a streaming request (log, exec, attach, portforward) is for, with
// the apiserver's and kubelet's refusals: 404 for a missing pod, 400 for a container that
// must be named or does not exist, a completed pod, or one whose container has not started.
// Ref: k8s.io/kubernetes/pkg/registry/core/pod/strategy.go (LogLocation, streamLocation:
// "a container name must be specified for pod %s, choose one of: %s", "container %s is not
// valid for pod %s"), pkg/kubelet/kubelet_pods.go ("previous terminated container %q in pod
// %q not found", "container %q in pod %q is waiting to start: %s").
import { StatusError } from '../../../kube/status.ts';
import type { SimContext } from '../server.ts';
import { isObject, type KObject } from '../types.ts';

export interface ContainerRef {
  pod: KObject;
  namespace: string;
  podName: string;
  container: string;
  /** The container's status entry, when the pod has one. */
  status?: Record<string, unknown>;
  spec: Record<string, unknown>;
}

export function podInfo(ctx: SimContext) {
  return ctx.registry.lookup('', 'v1', 'pods')!;
}

const containersOf = (pod: KObject, field: 'containers' | 'initContainers') => {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const list = spec[field];
  return Array.isArray(list) ? list.filter(isObject) : [];
};

/** Resolves `container` (or the only one, or the default-container annotation) of pod `namespace/name`. */
export function resolveContainer(ctx: SimContext, namespace: string, name: string, container: string | null, use: 'log' | 'exec'): ContainerRef {
  const pod = ctx.crud.get(podInfo(ctx), namespace, name);
  const containers = containersOf(pod, 'containers');
  const inits = containersOf(pod, 'initContainers');
  const names = containers.map((c) => String(c.name));
  let chosen = container ?? '';
  if (chosen === '') {
    const annotated = pod.metadata.annotations?.['kubectl.kubernetes.io/default-container'];
    if (containers.length === 1) chosen = names[0];
    else if (annotated && names.includes(annotated)) chosen = annotated;
    else {
      const initNames = inits.map((c) => String(c.name));
      const more = initNames.length ? ` or one of the init containers: [${initNames.join(' ')}]` : '';
      throw new StatusError('BadRequest', `a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]${more}`);
    }
  }
  const spec = [...containers, ...inits].find((c) => c.name === chosen);
  if (!spec) throw new StatusError('BadRequest', `container ${chosen} is not valid for pod ${name}`);
  const status = isObject(pod.status) ? pod.status : {};
  const phase = status.phase;
  if (use === 'exec' && (phase === 'Succeeded' || phase === 'Failed')) {
    throw new StatusError('BadRequest', `cannot exec into a container in a completed pod; current phase is ${String(phase)}`);
  }
  const statuses = [...(Array.isArray(status.containerStatuses) ? status.containerStatuses : []), ...(Array.isArray(status.initContainerStatuses) ? status.initContainerStatuses : [])].filter(isObject);
  const cs = statuses.find((s) => s.name === chosen);
  const running = cs && isObject(cs.state) && (isObject(cs.state.running) || isObject(cs.state.terminated));
  if (!running) {
    const waiting = cs && isObject(cs.state) && isObject(cs.state.waiting) ? String(cs.state.waiting.reason ?? 'ContainerCreating') : 'ContainerCreating';
    throw new StatusError('BadRequest', `container "${chosen}" in pod "${name}" is waiting to start: ${waiting}`);
  }
  return { pod, namespace, podName: name, container: chosen, status: cs, spec };
}
