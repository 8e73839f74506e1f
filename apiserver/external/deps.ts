// What serving external.metrics.k8s.io needs (serve.ts): the metrics file's rules, the
// request metrics, and the authorizer that re-checks a selector reading other namespaces.
import type { Authorizer } from '../auth/authz.ts';
import type { ApiserverMetrics } from '../endpoints/metrics.ts';
import type { RulesSource } from './rules-source.ts';

export interface ExternalMetricsDeps {
  rules: RulesSource;
  metrics: ApiserverMetrics;
  /** Secure serving: re-authorizes requests whose selector reads other namespaces. */
  authorizer?: Authorizer;
}
