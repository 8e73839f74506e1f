// Writes a simulated cluster refuses as kube-apiserver v1.28 refuses them: EndpointSlices,
// Services and labels (422 Invalid with kube's words and causes), values of the wrong type
// (400), unknown fields (dropped with a warning, or 400 under fieldValidation=Strict), and the
// defaults and allocations it fills in.
import t from 'tap';
import { dispatchManagedBy, dispatchedSliceName, labels as mcsLabels, managedByLabel, managedByValue } from '../../api/multicluster-service.ts';
import { http, kubectl, simCluster, tempDir } from './testutil.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SLICES = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';
const SERVICES = '/api/v1/namespaces/default/services';

const slice = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
  metadata: { name, labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: [{ addresses: ['10.244.1.5'], conditions: { ready: true, serving: true, terminating: false } }],
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  ...extra,
});

t.test('EndpointSlices: kube\'s rules and words', async (t) => {
  const c = await simCluster(t);
  const post = (body: unknown) => http('POST', `${c.url}${SLICES}`, body);

  const bad = await post(slice('bad', {
    metadata: { name: 'bad', labels: { 'kubernetes.io/service-name': 'web', 'x/y/z': 'v', ok: 'v'.repeat(64) } },
    endpoints: [{ addresses: ['10.0.0.256'] }, { addresses: [] }, { addresses: ['fd00::1'], hostname: 'Not_A_Label' }],
    ports: [{ name: 'Http', port: 80, protocol: 'TCP' }, { name: 'Http', port: 81, protocol: 'ICMP' }, { name: 'x', port: 82, appProtocol: 'a/b/c' }],
  }));
  t.equal(bad.status, 422);
  t.match(bad.json, { kind: 'Status', reason: 'Invalid', code: 422, details: { name: 'bad', group: 'discovery.k8s.io', kind: 'EndpointSlice' } });
  t.ok(bad.json.message.startsWith('EndpointSlice.discovery.k8s.io "bad" is invalid: ['), bad.json.message);
  const causes = (bad.json.details.causes as { reason: string; field: string; message: string }[]).map((x) => `${x.reason} ${x.field}: ${x.message}`);
  t.same(causes, [
    "FieldValueInvalid metadata.labels: Invalid value: \"x/y/z\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    `FieldValueInvalid metadata.labels: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`,
    'FieldValueInvalid endpoints[0].addresses[0]: Invalid value: "10.0.0.256": must be a valid IPv4 address',
    'FieldValueInvalid endpoints[0].addresses[0]: Invalid value: "10.0.0.256": must be a valid IP address',
    'FieldValueRequired endpoints[1].addresses: Required value: must contain at least 1 address',
    'FieldValueInvalid endpoints[2].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address',
    "FieldValueInvalid endpoints[2].hostname: Invalid value: \"Not_A_Label\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    "FieldValueInvalid ports[0].name: Invalid value: \"Http\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    "FieldValueInvalid ports[1].name: Invalid value: \"Http\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    'FieldValueDuplicate ports[1].name: Duplicate value: "Http"',
    'FieldValueNotSupported ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    "FieldValueInvalid ports[2].appProtocol: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
  ]);

  const type = await post(slice('t', { addressType: 'IP' }));
  t.equal(type.json.message, 'EndpointSlice.discovery.k8s.io "t" is invalid: addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"');
  const v6 = await post(slice('v6', { addressType: 'IPv6', endpoints: [{ addresses: ['10.0.0.1'] }] }));
  t.equal(v6.json.message, 'EndpointSlice.discovery.k8s.io "v6" is invalid: endpoints[0].addresses[0]: Invalid value: "10.0.0.1": must be a valid IPv6 address');
  // ValidateNonSpecialIP (CVE-2021-25737): what kube-proxy must never be sent to, in every spelling.
  const special = await post(slice('special', {
    endpoints: [
      { addresses: ['169.254.169.254'] }, { addresses: ['127.0.0.1'] }, { addresses: ['0.0.0.0'] }, { addresses: ['224.0.0.251'] },
      { addresses: ['::ffff:127.0.0.1'] }, { addresses: ['010.0.0.1'] }, { addresses: ['10.1.2.3'], nodeName: 'Node_1' },
      { addresses: ['10.1.2.4'], hints: { forZones: [{ name: 'a' }, { name: 'a' }] } },
    ],
  }));
  t.equal(special.status, 422);
  t.same((special.json.details.causes as { field: string; message: string }[]).map((x) => `${x.field}: ${x.message}`), [
    'endpoints[0].addresses[0]: Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'endpoints[1].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'endpoints[2].addresses[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
    'endpoints[3].addresses[0]: Invalid value: "224.0.0.251": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
    'endpoints[4].addresses[0]: Invalid value: "::ffff:127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    "endpoints[6].nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    'endpoints[7].hints.forZones[1].name: Duplicate value: "a"',
  ], 'leading zeros parse as kube parses them (ParseIPSloppy): 010.0.0.1 is 10.0.0.1');
  const v6special = await post(slice('v6special', { addressType: 'IPv6', endpoints: [{ addresses: ['::1'] }, { addresses: ['fe80::1'] }, { addresses: ['::'] }, { addresses: ['ff02::fb'] }, { addresses: ['fd00::1'] }] }));
  t.same((v6special.json.details.causes as { field: string; message: string }[]).map((x) => `${x.field}: ${x.message}`), [
    'endpoints[0].addresses[0]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'endpoints[1].addresses[0]: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'endpoints[2].addresses[0]: Invalid value: "::": may not be unspecified (::)',
    'endpoints[3].addresses[0]: Invalid value: "ff02::fb": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
  ]);
  const fqdn = await post(slice('f', { addressType: 'FQDN', endpoints: [{ addresses: ['db'] }, { addresses: ['db.example.com.'] }] }));
  t.equal(fqdn.json.message, 'EndpointSlice.discovery.k8s.io "f" is invalid: endpoints[0].addresses[0]: Invalid value: "db": should be a domain with at least two segments separated by dots');
  const many = await post(slice('many', { endpoints: Array.from({ length: 1001 }, (_, i) => ({ addresses: [`10.1.${i >> 8}.${i & 255}`] })) }));
  t.equal(many.json.message, 'EndpointSlice.discovery.k8s.io "many" is invalid: endpoints: Too many: 1001: must have at most 1000 items');
  t.match(many.json.details.causes, [{ reason: 'FieldValueTooMany', field: 'endpoints' }]);
  t.equal((await post(slice('thousand', { endpoints: Array.from({ length: 1000 }, (_, i) => ({ addresses: [`10.1.${i >> 8}.${i & 255}`] })) }))).status, 201, '1000 is the limit');
  const ports = await post(slice('ports', { ports: Array.from({ length: 101 }, (_, i) => ({ name: `p${i}`, port: 1000 + i })) }));
  t.equal(ports.json.message, 'EndpointSlice.discovery.k8s.io "ports" is invalid: ports: Too many: 101: must have at most 100 items');
  const long = await post(slice('a'.repeat(254)));
  t.equal(long.json.message, `EndpointSlice.discovery.k8s.io "${'a'.repeat(254)}" is invalid: metadata.name: Invalid value: "${'a'.repeat(254)}": must be no more than 253 characters`);
  t.equal((await post(slice('a'.repeat(253)))).status, 201, '253 characters is the limit');

  // Defaults: a port's name "" and protocol TCP; empty endpoints and ports come back null. A generation.
  const made = await post(slice('d', { endpoints: [], ports: [{ port: 80 }] }));
  t.equal(made.status, 201, made.text);
  t.same([made.json.endpoints, made.json.ports, made.json.metadata.generation], [null, [{ port: 80, name: '', protocol: 'TCP' }], 1]);
  // addressType is immutable; the generation follows everything but metadata, and the labels.
  const imm = await http('PUT', `${c.url}${SLICES}/d`, { ...made.json, addressType: 'IPv6' });
  t.equal(imm.json.message, 'EndpointSlice.discovery.k8s.io "d" is invalid: addressType: Invalid value: "IPv6": field is immutable');
  const relabel = await http('PATCH', `${c.url}${SLICES}/d`, { metadata: { labels: { extra: 'yes' } } }, { 'Content-Type': 'application/merge-patch+json' });
  t.equal(relabel.json.metadata.generation, 2);
  const annotate = await http('PATCH', `${c.url}${SLICES}/d`, { metadata: { annotations: { a: 'b' } } }, { 'Content-Type': 'application/merge-patch+json' });
  t.equal(annotate.json.metadata.generation, 2);
});

t.test('what Panoptes dispatches, named and labelled as the contract says, is valid', async (t) => {
  const c = await simCluster(t);
  const provider = 'p'.repeat(63);
  const name = dispatchedSliceName(provider, `web-${'x'.repeat(240)}`);
  t.ok(name.length <= 253);
  const r = await http('POST', `${c.url}${SLICES}`, slice(name, {
    metadata: {
      name,
      labels: {
        [mcsLabels.serviceName]: 'web', [mcsLabels.mcsServiceName]: 'web', [mcsLabels.sourceCluster]: provider,
        [mcsLabels.endpointSliceManagedBy]: dispatchManagedBy, [managedByLabel]: managedByValue,
      },
    },
  }));
  t.equal(r.status, 201, r.text);
});

t.test('Services: a selectorless ClusterIP Service, defaults, allocation and kube\'s 422s', async (t) => {
  const c = await simCluster(t);
  const post = (body: unknown) => http('POST', `${c.url}${SERVICES}`, body);

  const made = await post({ metadata: { name: 'web' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }, { name: 'grpc', port: 9090 }] } });
  t.equal(made.status, 201, made.text);
  t.match(made.json.spec, {
    type: 'ClusterIP', sessionAffinity: 'None', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster',
    ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }, { name: 'grpc', port: 9090, targetPort: 9090, protocol: 'TCP' }],
  });
  t.equal(made.json.spec.selector, undefined);
  const ip = made.json.spec.clusterIP as string;
  t.match(ip, /^10\.(9[6-9]|10\d|11[01])\.\d+\.\d+$/, 'from 10.96.0.0/12');
  t.same(made.json.spec.clusterIPs, [ip]);
  const headless = await post({ metadata: { name: 'direct' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } });
  t.match(headless.json.spec, { clusterIP: 'None', clusterIPs: ['None'], ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4'] });

  // A PUT that leaves the allocated clusterIP out keeps it; one that changes it is refused.
  const put = await http('PUT', `${c.url}${SERVICES}/web`, { metadata: { name: 'web' }, spec: { ports: [{ name: 'http', port: 80 }] } });
  t.equal(put.status, 200, put.text);
  t.same([put.json.spec.clusterIP, put.json.spec.clusterIPs], [ip, [ip]]);
  const moved = await http('PUT', `${c.url}${SERVICES}/web`, { metadata: { name: 'web' }, spec: { clusterIP: '10.96.7.7', clusterIPs: ['10.96.7.7'], ports: [{ name: 'http', port: 80 }] } });
  t.equal(moved.json.message, 'Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.7.7"}: may not change once set');

  const taken = await post({ metadata: { name: 'copy' }, spec: { clusterIP: ip, ports: [{ port: 80 }] } });
  t.equal(taken.json.message, `Service "copy" is invalid: spec.clusterIPs: Invalid value: []string{"${ip}"}: failed to allocate IP ${ip}: provided IP is already allocated`);
  const outside = await post({ metadata: { name: 'far' }, spec: { clusterIP: '10.0.0.10', ports: [{ port: 80 }] } });
  t.equal(outside.json.message, 'Service "far" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.10"}: failed to allocate IP 10.0.0.10: the provided IP (10.0.0.10) is not in the valid range. The range of valid IPs is 10.96.0.0/12');

  const bad = await post({ metadata: { name: 'Bad' }, spec: { type: 'Internal', externalTrafficPolicy: 'Local', ports: [{ port: 80 }, { port: 80, targetPort: 'http--x' }, { name: 'n', port: 70000, protocol: 'ICMP', nodePort: 30001 }], selector: { 'a b': 'c' } } });
  t.equal(bad.status, 422);
  t.same((bad.json.details.causes as { field: string; message: string }[]).map((x) => `${x.field}: ${x.message}`), [
    "metadata.name: Invalid value: \"Bad\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    'spec.ports[0].name: Required value',
    'spec.ports[1].name: Required value',
    'spec.ports[1].targetPort: Invalid value: "http--x": must not contain consecutive hyphens',
    'spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}',
    'spec.ports[2].port: Invalid value: 70000: must be between 1 and 65535, inclusive',
    'spec.ports[2].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    "spec.ports[2].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
    "spec.selector: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    'spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
    'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services',
  ]);
  const noPorts = await post({ metadata: { name: 'empty' }, spec: {} });
  t.equal(noPorts.json.message, 'Service "empty" is invalid: spec.ports: Required value');
  const nodePort = await post({ metadata: { name: 'np' }, spec: { ports: [{ port: 80, nodePort: 30080 }] } });
  t.equal(nodePort.json.message, "Service \"np\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'");
});

t.test('values of the wrong type: 400; unknown fields: dropped with a warning, or 400 when Strict', async (t) => {
  const c = await simCluster(t);
  const typed = await http('POST', `${c.url}${SLICES}`, slice('typed', { endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: 'true' } }] }));
  t.equal(typed.status, 400);
  t.match(typed.json, { reason: 'BadRequest', message: 'EndpointSlice in version "v1" cannot be handled as a EndpointSlice: json: cannot unmarshal string into Go struct field EndpointConditions.endpoints.conditions.ready of type bool' });
  const port = await http('POST', `${c.url}${SERVICES}`, { metadata: { name: 's' }, spec: { ports: [{ port: '80' }] } });
  t.equal(port.json.message, 'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32');

  const extra = slice('extra', { endpoints: [{ addresses: ['10.0.0.1'], zonee: 'a' }], spec: { x: 1 } });
  const warned = await http('POST', `${c.url}${SLICES}`, extra);
  t.equal(warned.status, 201);
  t.same(warned.headers.warning, '299 - "unknown field \\"endpoints[0].zonee\\"", 299 - "unknown field \\"spec\\""');
  t.same([warned.json.endpoints, warned.json.spec], [[{ addresses: ['10.0.0.1'] }], undefined], 'dropped');
  const strict = await http('POST', `${c.url}${SLICES}?fieldValidation=Strict`, { ...extra, metadata: { name: 'strict' } });
  t.equal(strict.status, 400);
  t.equal(strict.json.message, 'EndpointSlice in version "v1" cannot be handled as a EndpointSlice: strict decoding error: unknown field "endpoints[0].zonee", unknown field "spec"');
});

t.test('kubectl sees the same answers', async (t) => {
  const c = await simCluster(t);
  const dir = tempDir(t);
  const file = join(dir, 'slice.json');
  writeFileSync(file, JSON.stringify(slice('k', { endpoints: [{ addresses: ['not-an-ip'] }] })));
  const r = await kubectl(c, dir, ['create', '-f', file]);
  t.not(r.code, 0);
  t.match(r.stderr, 'The EndpointSlice "k" is invalid: ');
  t.match(r.stderr, 'endpoints[0].addresses[0]: Invalid value: "not-an-ip": must be a valid IPv4 address');
  t.match(r.stderr, 'endpoints[0].addresses[0]: Invalid value: "not-an-ip": must be a valid IP address');
  writeFileSync(file, JSON.stringify(slice('k', { endpoints: [{ addresses: ['10.0.0.1'], zonee: 'a' }] })));
  const strict = await kubectl(c, dir, ['create', '-f', file]);
  t.not(strict.code, 0, 'kubectl asks for Strict by default');
  t.match(strict.stderr, 'strict decoding error: unknown field "endpoints[0].zonee"');
  const lax = await kubectl(c, dir, ['create', '--validate=warn', '-f', file]);
  t.equal(lax.code, 0, lax.stderr);
  t.match(lax.stderr, 'Warning: unknown field "endpoints[0].zonee"');
});
