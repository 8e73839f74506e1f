// Kubernetes resource quantities as kube-apiserver writes them (k8s.io/apimachinery
// resource.Quantity, DecimalSI, canonical form): a whole number takes the largest SI suffix
// that keeps it whole (2000 → "2k", 1500 → "1500"), a fraction is written in thousandths
// ("2500m"). Values carry milli precision, rounded up as Quantity.MilliValue does.

const suffixes = ['', 'k', 'M', 'G', 'T', 'P', 'E'];

/** The value in thousandths, rounded up (float noise such as 0.1 * 1000 = 100.00000000000001 is not rounded up). */
export function toMilli(value: number): bigint {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  const scaled = value * 1000;
  const near = Math.round(scaled);
  const milli = Math.abs(scaled - near) < 1e-6 * Math.max(1, Math.abs(scaled)) ? near : Math.ceil(scaled);
  return BigInt(milli);
}

/** A number as a canonical DecimalSI quantity string. */
export function formatQuantity(value: number): string {
  const milli = toMilli(value);
  if (milli === 0n) return '0';
  if (milli % 1000n !== 0n) return `${milli}m`;
  let n = milli / 1000n;
  let i = 0;
  while (i < suffixes.length - 1 && n % 1000n === 0n) {
    n /= 1000n;
    i++;
  }
  return `${n}${suffixes[i]}`;
}
