// The name rules of apimachinery's validation (k8s.io/apimachinery/pkg/util/validation), with
// its messages: DNS-1123 labels (namespaces, cluster names), DNS-1123 subdomains (most object
// names, Secrets) and DNS-1035 labels (Service names: they start with a letter, since a Service
// name becomes a DNS name and an environment variable).

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dns1035Label = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

const dns1123LabelDetail =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const dns1123SubdomainDetail =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const dns1035LabelDetail =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/** Why `name` is not a DNS-1123 label (a namespace's or a cluster's name), or undefined. */
export function dnsLabelProblem(name: string): string | undefined {
  if (name.length > 63) return 'must be no more than 63 characters';
  if (!dns1123Label.test(name)) return dns1123LabelDetail;
  return undefined;
}

/** Why `name` is not a DNS-1123 subdomain (a Secret's name), or undefined. */
export function dnsSubdomainProblem(name: string): string | undefined {
  if (name.length > 253) return 'must be no more than 253 characters';
  if (!dns1123Subdomain.test(name)) return dns1123SubdomainDetail;
  return undefined;
}

/** Why `name` is not a DNS-1035 label (a Service's name), or undefined. */
export function dns1035LabelProblem(name: string): string | undefined {
  if (name.length > 63) return 'must be no more than 63 characters';
  if (!dns1035Label.test(name)) return dns1035LabelDetail;
  return undefined;
}
