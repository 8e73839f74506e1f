// kube-apiserver v1.28's validation of what a simulated cluster is written, as far as
// Panoptes writes to members: every object's metadata (name, generateName, labels,
// annotations, ownerReferences, finalizers), EndpointSlices (addresses per addressType and
// ValidateNonSpecialIP: no loopback, link-local or unspecified endpoint) and Services. The rules and the
// words are kube's, so an object a real cluster refuses is refused here with the same 422.
// Ref: k8s.io/apimachinery/pkg/util/validation (IsQualifiedName, IsValidLabelValue,
// IsDNS1123Label/Subdomain, IsDNS1035Label, IsValidPortNum, IsValidPortName, IsValidIP...),
// apimachinery/pkg/api/validation/objectmeta.go, apimachinery/pkg/apis/meta/v1/validation,
// pkg/apis/discovery/validation/validation.go, pkg/apis/core/validation/validation.go
// (ValidateService, validateServicePort, ValidateServiceClusterIPsRelatedFields,
// validateUpgradeDowngradeClusterIPs).
import {
  fieldDuplicate, fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired, fieldTooLong, fieldTooMany, GoSyntax, type FieldError,
} from '../../kube/field-errors.ts';
import { ipBytes, nonSpecialIPProblems } from '../../kube/ip.ts';
import type { ResourceInfo } from './resources.ts';
import { isObject, type JsonObject, type KObject } from './types.ts';

/** validation.RegexError: kube's wording, double space before each "or" included. */
function regexError(msg: string, format: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${format}')`;
  return `${msg} (e.g. ${examples.map((e, i) => `${i > 0 ? ' or ' : ''}'${e}', `).join('')}regex used for validation is '${format}')`;
}

const maxLen = (n: number) => `must be no more than ${n} characters`;
const emptyError = 'must be non-empty';

const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameRe = new RegExp(`^${qualifiedNameFmt}$`);
const qualifiedNameMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** IsQualifiedName: a label key, an annotation key (lower-cased), a finalizer, an appProtocol. */
export function qualifiedNameProblems(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0];
  } else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) errs.push(`prefix part ${emptyError}`);
    else errs.push(...dns1123SubdomainProblems(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [`a qualified name ${regexError(qualifiedNameMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push(`name part ${emptyError}`);
  else if (name.length > 63) errs.push(`name part ${maxLen(63)}`);
  if (!qualifiedNameRe.test(name)) errs.push(`name part ${regexError(qualifiedNameMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/** The checks of the Is* functions below: a maximum length, then a pattern, each with its message. */
function lengthAndPattern(value: string, max: number, format: string, msg: string, ...examples: string[]): string[] {
  const errs: string[] = [];
  if (value.length > max) errs.push(maxLen(max));
  if (!new RegExp(`^${format}$`).test(value)) errs.push(regexError(msg, format, ...examples));
  return errs;
}

/** IsValidLabelValue */
export const labelValueProblems = (value: string): string[] =>
  lengthAndPattern(value, 63, `(${qualifiedNameFmt})?`, "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", 'MyValue', 'my_value', '12345');

/** IsDNS1035Label (a Service's name) */
const dns1035Problems = (value: string): string[] =>
  lengthAndPattern(value, 63, '[a-z]([-a-z0-9]*[a-z0-9])?', "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character", 'my-name', 'abc-123');

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';

/** IsDNS1123Label (a Namespace's name, a port's name, a hostname) */
const dns1123LabelProblems = (value: string): string[] =>
  lengthAndPattern(value, 63, dns1123LabelFmt, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", 'my-name', '123-abc');

/** IsDNS1123Subdomain (most objects' names) */
const dns1123SubdomainProblems = (value: string): string[] =>
  lengthAndPattern(value, 253, `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", 'example.com');

const dns1123Label = (value: string, path: string): FieldError[] => invalidEach(path, value, dns1123LabelProblems(value));

/** IsValidPortNum */
const portNumProblem = (n: unknown) => (typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535 ? undefined : 'must be between 1 and 65535, inclusive');

/** IsValidPortName (a named targetPort, an IANA_SVC_NAME) */
function portNameProblems(port: string): string[] {
  const errs: string[] = [];
  if (port.length > 15) errs.push(maxLen(15));
  if (!/^[-a-z0-9]+$/.test(port)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(port)) errs.push('must contain at least one letter (a-z)');
  if (port.includes('--')) errs.push('must not contain consecutive hyphens');
  if (port.length > 0 && (port.startsWith('-') || port.endsWith('-'))) errs.push('must not begin or end with a hyphen');
  return errs;
}

const invalidEach = (path: string, value: unknown, msgs: string[]): FieldError[] => msgs.map((m) => fieldInvalid(path, value, m));

// ---- metadata

/** How a kind's name is checked (path.ValidatePathSegmentName for RBAC, DNS-1035 for Services, DNS-1123 labels for Namespaces, subdomains otherwise). */
function nameProblems(info: ResourceInfo, name: string, prefix: boolean): string[] {
  // NameIsDNSSubdomain and friends, with prefix: a generateName may end with '-'.
  const n = prefix ? name.replace(/-$/, 'a') : name;
  if (info.group === 'rbac.authorization.k8s.io') {
    if (n === '.' || n === '..') return [`may not be '${n}'`];
    const bad = ['/', '%'].find((c) => n.includes(c));
    return bad ? [`may not contain '${bad}'`] : [];
  }
  if (info.id === '/services') return dns1035Problems(n);
  if (info.id === '/namespaces') return dns1123LabelProblems(n);
  return dns1123SubdomainProblems(n);
}

/** The total size of annotations kube allows (TotalAnnotationSizeLimitB). */
const annotationsLimit = 256 * 1024;

/** ValidateObjectMeta (apimachinery): name, generateName, labels, annotations, ownerReferences, finalizers. */
export function validateMetadata(info: ResourceInfo, obj: KObject): FieldError[] {
  const meta = obj.metadata;
  const errs: FieldError[] = [];
  if (typeof meta.generateName === 'string' && meta.generateName !== '') {
    errs.push(...invalidEach('metadata.generateName', meta.generateName, nameProblems(info, meta.generateName, true)));
  }
  if (!meta.name) errs.push(fieldRequired('metadata.name', 'name or generateName is required'));
  else errs.push(...invalidEach('metadata.name', meta.name, nameProblems(info, meta.name, false)));
  errs.push(...validateLabels(meta.labels, 'metadata.labels'));
  const annotations = isObject(meta.annotations) ? meta.annotations : {};
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) {
    errs.push(...invalidEach('metadata.annotations', k, qualifiedNameProblems(k.toLowerCase())));
    size += k.length + String(v).length;
  }
  if (size > annotationsLimit) errs.push(fieldTooLong('metadata.annotations', annotationsLimit));
  let firstController = '';
  for (const ref of Array.isArray(meta.ownerReferences) ? meta.ownerReferences : []) {
    const r = isObject(ref) ? (ref as JsonObject) : {};
    const p = 'metadata.ownerReferences';
    const apiVersion = typeof r.apiVersion === 'string' ? r.apiVersion : '';
    if (apiVersion.split('/').pop() === '') errs.push(fieldInvalid(`${p}.apiVersion`, apiVersion, 'version must not be empty'));
    if (!r.kind) errs.push(fieldInvalid(`${p}.kind`, r.kind ?? '', 'kind must not be empty'));
    if (!r.name) errs.push(fieldInvalid(`${p}.name`, r.name ?? '', 'name must not be empty'));
    if (!r.uid) errs.push(fieldInvalid(`${p}.uid`, r.uid ?? '', 'uid must not be empty'));
    if (r.controller === true) {
      const current = `${String(r.kind)}/${String(r.name)}`;
      if (firstController) errs.push(fieldInvalid(p, firstController, `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`));
      else firstController = current;
    }
  }
  for (const f of Array.isArray(meta.finalizers) ? meta.finalizers : []) {
    errs.push(...invalidEach('metadata.finalizers', f, qualifiedNameProblems(String(f))));
  }
  return errs;
}

/** ValidateLabels: every key a qualified name, every value a label value; the field is the map's. */
export function validateLabels(labels: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(isObject(labels) ? labels : {})) {
    errs.push(...invalidEach(path, k, qualifiedNameProblems(k)));
    errs.push(...invalidEach(path, v, labelValueProblems(String(v))));
  }
  return errs;
}

// ---- EndpointSlice

const addressTypes = ['FQDN', 'IPv4', 'IPv6'];
const protocols = ['SCTP', 'TCP', 'UDP'];

/** netutils.ParseIPSloppy: IPv4 may have leading zeros. */
function parseIP(s: string): 4 | 6 | undefined {
  const b = ipBytes(s);
  return b === undefined ? undefined : b.length === 4 ? 4 : 6;
}

/** IsFullyQualifiedDomainName */
function fqdnErrors(path: string, value: string): FieldError[] {
  if (value.length === 0) return [fieldRequired(path)];
  const name = value.endsWith('.') ? value.slice(0, -1) : value;
  const sub = dns1123SubdomainProblems(name);
  if (sub.length) return [fieldInvalid(path, name, sub.join(','))];
  const labels = name.split('.');
  if (labels.length < 2) return [fieldInvalid(path, name, 'should be a domain with at least two segments separated by dots')];
  for (const label of labels) {
    const p = dns1123LabelProblems(label);
    if (p.length) return [fieldInvalid(path, label, p.join(','))];
  }
  return [];
}

/** validateHints: at most 8 zones, each once, each a label value. */
function hintErrors(hints: JsonObject, path: string): FieldError[] {
  const zones = Array.isArray(hints.forZones) ? hints.forZones : [];
  if (zones.length > 8) return [fieldTooMany(`${path}.forZones`, zones.length, 8)];
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  zones.forEach((z, i) => {
    const name = isObject(z) && typeof z.name === 'string' ? z.name : '';
    const p = `${path}.forZones[${i}].name`;
    if (seen.has(name)) errs.push(fieldDuplicate(p, name));
    seen.add(name);
    errs.push(...invalidEach(p, name, labelValueProblems(name)));
  });
  return errs;
}

function validateEndpointSlice(obj: KObject, old: KObject | undefined): FieldError[] {
  const errs: FieldError[] = [];
  const type = obj.addressType;
  // The deprecated "IP" type may stay on an update; no create makes one.
  const supported = old ? [...addressTypes, 'IP'] : addressTypes;
  if (type === undefined || type === '') errs.push(fieldRequired('addressType'));
  else if (!supported.includes(String(type))) errs.push(fieldNotSupported('addressType', type, supported));
  const endpoints = Array.isArray(obj.endpoints) ? obj.endpoints : [];
  if (endpoints.length > 1000) {
    errs.push(fieldTooMany('endpoints', endpoints.length, 1000));
  } else {
    endpoints.forEach((ep, i) => {
      const e = isObject(ep) ? ep : {};
      const p = `endpoints[${i}].addresses`;
      const addresses = Array.isArray(e.addresses) ? e.addresses.map(String) : [];
      if (addresses.length === 0) errs.push(fieldRequired(p, 'must contain at least 1 address'));
      else if (addresses.length > 100) errs.push(fieldTooMany(p, addresses.length, 100));
      addresses.forEach((a, j) => {
        const ap = `${p}[${j}]`;
        // IsValidIPv4Address / IsValidIPv6Address, then ValidateNonSpecialIP, both appended as kube does.
        if (type === 'IPv4' || type === 'IPv6') {
          if (parseIP(a) !== (type === 'IPv4' ? 4 : 6)) errs.push(fieldInvalid(ap, a, `must be a valid ${type} address`));
          errs.push(...invalidEach(ap, a, nonSpecialIPProblems(a)));
        } else if (type === 'IP' && parseIP(a) === undefined) errs.push(fieldInvalid(ap, a, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
        else if (type === 'FQDN') errs.push(...fqdnErrors(ap, a));
      });
      // ValidateNodeName: a DNS subdomain.
      if (typeof e.nodeName === 'string') errs.push(...invalidEach(`endpoints[${i}].nodeName`, e.nodeName, dns1123SubdomainProblems(e.nodeName)));
      const topology = isObject(e.deprecatedTopology) ? e.deprecatedTopology : {};
      if (Object.keys(topology).length > 16) errs.push(fieldTooMany(`endpoints[${i}].deprecatedTopology`, Object.keys(topology).length, 16));
      errs.push(...validateLabels(topology, `endpoints[${i}].deprecatedTopology`));
      if (typeof e.hostname === 'string') errs.push(...dns1123Label(e.hostname, `endpoints[${i}].hostname`));
      if (isObject(e.hints)) errs.push(...hintErrors(e.hints, `endpoints[${i}].hints`));
    });
  }
  const ports = Array.isArray(obj.ports) ? obj.ports : [];
  if (ports.length > 100) {
    errs.push(fieldTooMany('ports', ports.length, 100));
  } else {
    const names = new Set<string>();
    ports.forEach((port, i) => {
      const p = isObject(port) ? port : {};
      const name = typeof p.name === 'string' ? p.name : '';
      if (name.length > 0) errs.push(...dns1123Label(name, `ports[${i}].name`));
      if (names.has(name)) errs.push(fieldDuplicate(`ports[${i}].name`, name));
      names.add(name);
      if (p.protocol === undefined || p.protocol === null) errs.push(fieldRequired(`ports[${i}].protocol`));
      else if (!protocols.includes(String(p.protocol))) errs.push(fieldNotSupported(`ports[${i}].protocol`, p.protocol, protocols));
      if (typeof p.appProtocol === 'string') errs.push(...invalidEach(`ports[${i}].appProtocol`, p.appProtocol, qualifiedNameProblems(p.appProtocol)));
    });
  }
  if (old && old.addressType !== obj.addressType) errs.push(fieldInvalid('addressType', obj.addressType, 'field is immutable'));
  return errs;
}

// ---- Service

const serviceTypes = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
const ipFamilies = ['IPv4', 'IPv6'];
const ipFamilyPolicies = ['PreferDualStack', 'RequireDualStack', 'SingleStack'];

/** Go's %#v of the core.ServicePort key kube reports a duplicate (protocol, port) with. */
const servicePortKey = (protocol: unknown, port: unknown) =>
  new GoSyntax(`core.ServicePort{Name:"", Protocol:${JSON.stringify(String(protocol ?? ''))}, AppProtocol:(*string)(nil), Port:${Number(port) || 0}, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}`);

function validateServicePorts(spec: JsonObject, headless: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const ports = Array.isArray(spec.ports) ? spec.ports : [];
  if (ports.length === 0 && !headless && spec.type !== 'ExternalName') errs.push(fieldRequired('spec.ports'));
  const names = new Set<string>();
  const keys = new Set<string>();
  ports.forEach((port, i) => {
    const p = isObject(port) ? port : {};
    const path = `spec.ports[${i}]`;
    const name = typeof p.name === 'string' ? p.name : '';
    if (ports.length > 1 && name === '') errs.push(fieldRequired(`${path}.name`));
    else if (name !== '') {
      errs.push(...dns1123Label(name, `${path}.name`));
      if (names.has(name)) errs.push(fieldDuplicate(`${path}.name`, name));
      names.add(name);
    }
    const portProblem = portNumProblem(p.port);
    if (portProblem) errs.push(fieldInvalid(`${path}.port`, p.port ?? 0, portProblem));
    if (p.protocol === undefined || p.protocol === '') errs.push(fieldRequired(`${path}.protocol`));
    else if (!protocols.includes(String(p.protocol))) errs.push(fieldNotSupported(`${path}.protocol`, p.protocol, protocols));
    if (typeof p.targetPort === 'string') errs.push(...invalidEach(`${path}.targetPort`, p.targetPort, portNameProblems(p.targetPort)));
    else if (p.targetPort !== undefined) {
      const tp = portNumProblem(p.targetPort);
      if (tp) errs.push(fieldInvalid(`${path}.targetPort`, p.targetPort, tp));
    }
    if (typeof p.appProtocol === 'string') errs.push(...invalidEach(`${path}.appProtocol`, p.appProtocol, qualifiedNameProblems(p.appProtocol)));
    if (spec.type === 'ClusterIP' && p.nodePort !== undefined && p.nodePort !== 0) errs.push(fieldForbidden(`${path}.nodePort`, "may not be used when `type` is 'ClusterIP'"));
    const key = `${String(p.protocol)}/${String(p.port)}`;
    if (keys.has(key)) errs.push(fieldDuplicate(path, servicePortKey(p.protocol, p.port)));
    keys.add(key);
  });
  return errs;
}

/** ValidateServiceClusterIPsRelatedFields */
function validateClusterIPs(spec: JsonObject): FieldError[] {
  if (spec.type === 'ExternalName') return [];
  const errs: FieldError[] = [];
  const ip = typeof spec.clusterIP === 'string' ? spec.clusterIP : '';
  const ips = Array.isArray(spec.clusterIPs) ? spec.clusterIPs.map(String) : [];
  if (ip !== '') {
    if (ips.length === 0) errs.push(fieldRequired('spec.clusterIPs'));
    else if (ips[0] !== ip) errs.push(fieldInvalid('spec.clusterIPs', ips, 'first value must match `clusterIP`'));
  } else if (ips.length) {
    errs.push(fieldInvalid('spec.clusterIPs', ips, 'must be empty when `clusterIP` is not specified'));
  }
  const families = Array.isArray(spec.ipFamilies) ? spec.ipFamilies : [];
  const seen = new Set<string>();
  families.forEach((f, i) => {
    if (!ipFamilies.includes(String(f))) errs.push(fieldNotSupported(`spec.ipFamilies[${i}]`, f, ipFamilies));
    if (seen.has(String(f))) errs.push(fieldDuplicate(`spec.ipFamilies[${i}]`, f));
    seen.add(String(f));
  });
  if (spec.ipFamilyPolicy !== undefined && spec.ipFamilyPolicy !== null && !ipFamilyPolicies.includes(String(spec.ipFamilyPolicy))) {
    errs.push(fieldNotSupported('spec.ipFamilyPolicy', spec.ipFamilyPolicy, ipFamilyPolicies));
  }
  let bad = false;
  ips.forEach((x, i) => {
    if (i === 0 && x === 'None') {
      if (ips.length > 1) {
        bad = true;
        errs.push(fieldInvalid('spec.clusterIPs', ips, "'None' must be the first and only value"));
      }
      return;
    }
    if (parseIP(x) === undefined) {
      bad = true;
      errs.push(fieldInvalid(`spec.clusterIPs[${i}]`, x, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
    }
  });
  if (ips.length > 2) errs.push(fieldInvalid('spec.clusterIPs', ips, 'may only hold up to 2 values'));
  if (bad) return errs;
  if (ips.length === 2 && parseIP(ips[0]) === parseIP(ips[1])) errs.push(fieldInvalid('spec.clusterIPs', ips, 'may specify no more than one IP for each IP family'));
  if (!(ips.length === 1 && ips[0] === 'None')) {
    ips.forEach((x, i) => {
      if (i >= families.length) return;
      if (families[i] === 'IPv4' && parseIP(x) === 6) errs.push(fieldInvalid(`spec.clusterIPs[${i}]`, x, `expected an IPv4 value as indicated by \`ipFamilies[${i}]\``));
      if (families[i] === 'IPv6' && parseIP(x) !== 6) errs.push(fieldInvalid(`spec.clusterIPs[${i}]`, x, `expected an IPv6 value as indicated by \`ipFamilies[${i}]\``));
    });
  }
  return errs;
}

function validateService(obj: KObject, old: KObject | undefined): FieldError[] {
  const spec = isObject(obj.spec) ? obj.spec : {};
  const errs: FieldError[] = [];
  const headless = spec.clusterIP === 'None';
  switch (spec.type) {
    case 'NodePort':
      if (headless) errs.push(fieldInvalid('spec.clusterIP', spec.clusterIP, "may not be set to 'None' for NodePort services"));
      break;
    case 'LoadBalancer':
      if (headless) errs.push(fieldInvalid('spec.clusterIP', spec.clusterIP, "may not be set to 'None' for LoadBalancer services"));
      break;
    case 'ExternalName':
      if (spec.clusterIP !== undefined && spec.clusterIP !== '') errs.push(fieldForbidden('spec.clusterIP', 'may not be set for ExternalName services'));
      if (typeof spec.externalName === 'string' && spec.externalName !== '') {
        errs.push(...invalidEach('spec.externalName', spec.externalName, dns1123SubdomainProblems(spec.externalName)));
      } else {
        errs.push(fieldRequired('spec.externalName'));
      }
      break;
  }
  errs.push(...validateServicePorts(spec, headless));
  if (spec.selector !== undefined && spec.selector !== null) errs.push(...validateLabels(spec.selector, 'spec.selector'));
  if (spec.sessionAffinity === undefined || spec.sessionAffinity === '') errs.push(fieldRequired('spec.sessionAffinity'));
  else if (!['ClientIP', 'None'].includes(String(spec.sessionAffinity))) errs.push(fieldNotSupported('spec.sessionAffinity', spec.sessionAffinity, ['ClientIP', 'None']));
  if (spec.sessionAffinity === 'None' && spec.sessionAffinityConfig !== undefined && spec.sessionAffinityConfig !== null) {
    errs.push(fieldForbidden('spec.sessionAffinityConfig', 'must not be set when session affinity is None'));
  }
  if (spec.type === undefined || spec.type === '') errs.push(fieldRequired('spec.type'));
  else if (!serviceTypes.includes(String(spec.type))) errs.push(fieldNotSupported('spec.type', spec.type, serviceTypes));
  const externallyAccessible = spec.type === 'LoadBalancer' || spec.type === 'NodePort' || (spec.type === 'ClusterIP' && Array.isArray(spec.externalIPs) && spec.externalIPs.length > 0);
  if (!externallyAccessible && spec.externalTrafficPolicy !== undefined && spec.externalTrafficPolicy !== '') {
    errs.push(fieldInvalid('spec.externalTrafficPolicy', spec.externalTrafficPolicy, 'may only be set for externally-accessible services'));
  } else if (externallyAccessible && spec.externalTrafficPolicy !== undefined && !['Cluster', 'Local'].includes(String(spec.externalTrafficPolicy))) {
    errs.push(fieldNotSupported('spec.externalTrafficPolicy', spec.externalTrafficPolicy, ['Cluster', 'Local']));
  }
  if (spec.internalTrafficPolicy !== undefined && spec.type !== 'ExternalName' && !['Cluster', 'Local'].includes(String(spec.internalTrafficPolicy))) {
    errs.push(fieldNotSupported('spec.internalTrafficPolicy', spec.internalTrafficPolicy, ['Cluster', 'Local']));
  }
  if (Array.isArray(spec.loadBalancerSourceRanges) && spec.loadBalancerSourceRanges.length > 0 && spec.type !== 'LoadBalancer') {
    errs.push(fieldForbidden('spec.loadBalancerSourceRanges', "may only be used when `type` is 'LoadBalancer'"));
  }
  errs.push(...validateClusterIPs(spec));
  if (old) errs.push(...clusterIPChanges(old, obj));
  return errs;
}

/** validateUpgradeDowngradeClusterIPs: the primary clusterIP may not change once set. */
function clusterIPChanges(old: KObject, obj: KObject): FieldError[] {
  const o = isObject(old.spec) ? old.spec : {};
  const n = isObject(obj.spec) ? obj.spec : {};
  if (o.type === 'ExternalName' || n.type === 'ExternalName') return [];
  const oldIPs = Array.isArray(o.clusterIPs) ? o.clusterIPs.map(String) : [];
  const newIPs = Array.isArray(n.clusterIPs) ? n.clusterIPs.map(String) : [];
  const headless = (ips: string[]) => ips.length === 1 && ips[0] === 'None';
  if (headless(oldIPs) && headless(newIPs)) return [];
  if (oldIPs.length === newIPs.length) {
    return oldIPs.flatMap((ip, i) => (ip !== newIPs[i] ? [fieldInvalid(`spec.clusterIPs[${i}]`, newIPs, 'may not change once set')] : []));
  }
  if (newIPs.length === 0) return [fieldInvalid('spec.clusterIPs[0]', newIPs, 'primary clusterIP can not be unset')];
  if (oldIPs.length > 0 && newIPs[0] !== oldIPs[0]) return [fieldInvalid('spec.clusterIPs[0]', newIPs, 'may not change once set')];
  return [];
}

/** The field errors of an object written to a simulated cluster (old: the stored object, on an update). */
export function validateObject(info: ResourceInfo, obj: KObject, old?: KObject): FieldError[] {
  const errs = validateMetadata(info, obj);
  if (info.id === 'discovery.k8s.io/endpointslices') errs.push(...validateEndpointSlice(obj, old));
  if (info.id === '/services') errs.push(...validateService(obj, old));
  return errs;
}
